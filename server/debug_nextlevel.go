//go:build redcell_nextlevel

package server

import (
	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// The test build's command one cluster feature level above the base
// (request/nextlevel.go), for the rolling-upgrade tests.

func init() { debugSubcommands["nextlevel"] = cmdDebugNextLevel }

// DEBUG NEXTLEVEL key value
// Testing hook of the redcell_nextlevel build, only with
// --enable-debug-command: SET key value, logged as a code that only this
// build knows, so it is refused until the cluster's feature level is 2.
func cmdDebugNextLevel(c *conn, args [][]byte) {
	if len(args) != 4 {
		c.fail(commands.ErrSyntax)
		return
	}
	reqs := []request.Request{{Code: request.DebugNextLevel, Key: args[2], Keys: [][]byte{args[3]}}}
	c.answer(reqs, c.s.cfg.Backend.Propose)
}
