package commands

import "github.com/redcell/redcell/internal/glob"

// GlobMatch matches str against a Redis glob pattern (Redis's
// stringmatchlen; see internal/glob): CONFIG GET's patterns. KEYS and SCAN
// MATCH run the same matcher in the state machine.
func GlobMatch(pattern, str []byte, nocase bool) bool {
	return glob.Match(pattern, str, nocase)
}
