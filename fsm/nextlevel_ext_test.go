//go:build redcell_nextlevel

package fsm_test

import "github.com/redcell/redcell/request"

// The test build's code one level above the base (request/nextlevel.go),
// which no command parses: the server's DEBUG NEXTLEVEL builds it.
func init() { serverBuilt[request.DebugNextLevel] = true }
