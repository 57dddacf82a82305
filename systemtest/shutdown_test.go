package systemtest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestShutdownCommand: SHUTDOWN (saving by default) and SHUTDOWN NOSAVE stop
// the process with exit code 0, the caller's connection closing without a
// reply; the state is there after a restart; LASTSAVE reports the snapshot
// SHUTDOWN took; CONFIG GET answers how Redcell persists.
func TestShutdownCommand(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "shutdown")
	c := mustDial(t, n.addr())
	rawExchange(t, c, "*6\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n$4\r\nsave\r\n$8\r\n30 16384\r\n",
		"CONFIG", "GET", "appendonly", "appendfsync", "save")
	origin := freshBase(t, c)
	for j := int64(1); j <= 3; j++ {
		expectReply(t, c, wantInts(0, 5, 5-j, -1, 100*j), "CL.THROTTLE", "sd", "4", "1", "100")
	}
	started := time.Now().Unix()

	for round, args := range [][]string{{"SHUTDOWN"}, {"SHUTDOWN", "NOSAVE"}} {
		c.send(args...)
		if err := c.flush(); err != nil {
			t.Fatal(err)
		}
		if err := c.expectClosed(); err != nil {
			t.Errorf("%q: the connection: %v", args, err)
		}
		if err := n.waitExit(stopTimeout); err != nil {
			n.kill()
			t.Fatalf("%q: %v", args, err)
		}
		if code := n.exitCode(); code != 0 {
			t.Errorf("%q: exit code %d, want 0", args, code)
		}
		if log := n.logTail(1 << 16); !strings.Contains(log, "SHUTDOWN") {
			t.Errorf("%q: the log does not say why the node stopped:\n%s", args, lastLines(log, 20))
		}
		n.mustRestart(t)
		c = mustDial(t, n.addr())
		setClock(t, c, origin)
		expectReply(t, c, wantInts(0, 5, 2, -1, 300), "CL.PEEK", "sd", "4", "1", "100", "0")
		if round == 0 {
			// The snapshot SHUTDOWN took is the newest: LASTSAVE is its time.
			r := mustDo(t, c, "LASTSAVE")
			if r.kind != ':' || r.num < started || r.num > time.Now().Unix() {
				t.Errorf("LASTSAVE after SHUTDOWN (save) and a restart = %v, want a time since %d", r, started)
			}
			info := mustDo(t, c, "INFO", "raft")
			if idx, _ := strconv.Atoi(infoField(info.str, "raft_last_snapshot_index")); idx == 0 {
				t.Errorf("no snapshot after SHUTDOWN: %s", info.str)
			}
		}
	}
	n.mustStop(t)
}
