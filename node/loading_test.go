package node

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// A restarted node answers while it loads: commands that need the keyspace
// get Redis's LOADING error at once, PING and INFO run and INFO says
// loading:1; once loaded the same commands are answered from the replayed
// state. The restart uses two-second Raft timeouts and leaves the election
// to raft's timer (a lone voter otherwise campaigns at once), so the node
// cannot have elected itself (a single node replays its log only as leader,
// once it knows what is committed) before the first requests arrive: no
// sleeping is needed to catch it loading.
func TestRestartedNodeAnswersLOADINGUntilLoaded(t *testing.T) {
	dir := t.TempDir()
	n := mustOpen(t, dir, nil)
	cl := dial(t, n)
	const keys = 2000
	var pipe strings.Builder
	for i := 0; i < keys; i++ {
		fmt.Fprintf(&pipe, "*5\r\n$11\r\nCL.THROTTLE\r\n$%d\r\n%s\r\n$1\r\n9\r\n$1\r\n1\r\n$5\r\n86400\r\n", len(fmt.Sprint("k", i)), fmt.Sprint("k", i))
	}
	if _, err := cl.c.Write([]byte(pipe.String())); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < keys; i++ {
		for j := 0; j < 6; j++ { // *5 and five integers
			if _, err := cl.r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustClose(t, n)

	n = mustOpen(t, dir, func(c *Config) {
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, 2*time.Second
		c.waitForElectionTimer = true
	})
	defer mustClose(t, n)
	cl = dial(t, n)
	const loading = "-LOADING Redis is loading the dataset in memory"
	if got := cl.throttle(t, "k1"); got != loading {
		t.Fatalf("CL.THROTTLE right after the restart: %q, want %q", got, loading)
	}
	if got := cl.do(t, "DBSIZE"); got != loading {
		t.Fatalf("DBSIZE while loading: %q", got)
	}
	if got := cl.do(t, "PING"); got != "+PONG" {
		t.Fatalf("PING while loading: %q", got)
	}
	if info := infoPersistence(t, cl); !strings.Contains(info, "loading:1\r\n") || !strings.Contains(info, "loading_target_index:") {
		t.Fatalf("INFO persistence while loading:\n%s", info)
	}

	select {
	case <-n.base.group.Loaded():
	case <-time.After(20 * time.Second):
		t.Fatal("still loading 20s after the restart")
	}
	if info := infoPersistence(t, cl); !strings.Contains(info, "loading:0\r\n") {
		t.Fatalf("INFO persistence once loaded:\n%s", info)
	}
	if got := cl.throttle(t, "k1"); !strings.HasPrefix(got, ":0 :10 :8 ") {
		t.Fatalf("CL.THROTTLE once loaded: %q, want the second decision of k1 (remaining 8)", got)
	}
	if got := cl.do(t, "DBSIZE"); got != fmt.Sprintf(":%d", keys) {
		t.Fatalf("DBSIZE once loaded: %q, want %d", got, keys)
	}
}

// infoPersistence returns the text of INFO persistence (a bulk string).
func infoPersistence(t *testing.T, cl *client) string {
	t.Helper()
	head := cl.do(t, "INFO", "persistence")
	var n int
	if _, err := fmt.Sscanf(head, "$%d", &n); err != nil {
		t.Fatalf("INFO persistence: %q", head)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(cl.r, buf); err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}
