package systemtest

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestSecondProcessOnADataDirSaysSo: a second redcell started on a data
// dir a running one holds exits at once, saying that another process holds
// it, and the first goes on deciding.
func TestSecondProcessOnADataDirSaysSo(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "holder")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(redcellBinary, "--port", strconv.Itoa(port), "--data-dir", n.dataDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("a second process on a held data dir started")
	}
	if !strings.Contains(stderr.String(), "another process holds the data dir "+n.dataDir) {
		t.Errorf("its error:\n%s", stderr.String())
	}
	c := mustDial(t, n.addr())
	expectReply(t, c, wantInts(0, 10, 9, -1, 6), "CL.THROTTLE", "k", "9", "10", "60")
}
