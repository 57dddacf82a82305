package systemtest

import (
	"fmt"
	"os"
	"testing"
)

// TestMain builds the redcell binary once for the whole run, runs the tests,
// then stops the shared node, requiring it to exit cleanly.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "redcell-systemtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemtest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	redcellBinary, err = buildRedcell(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemtest:", err)
		return 1
	}
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "systemtest: stopping the shared node:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
