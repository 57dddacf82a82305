package systemtest

import (
	"strconv"
	"sync"
	"testing"
)

// TestClusterMultiExecIsOneUnit: a MULTI/EXEC sent to a follower is
// forwarded to the leader whole and decided in one log entry there, its reads
// seeing its own writes; and transactions sent to every node at once never
// interleave with each other.
func TestClusterMultiExecIsOneUnit(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	follower := (leader + 1) % 3
	lc := mustDial(t, c.nodes[leader].addr())
	fc := mustDial(t, c.nodes[follower].addr())
	expectReply(t, lc, wantStatus("OK"), "DEBUG", "CLOCK", "SET", "4000000000000000000")

	raftInt := func(i int, field string) int64 {
		t.Helper()
		info, err := c.info(i)
		if err != nil {
			t.Fatalf("INFO raft of %s: %v", c.nodes[i].id, err)
		}
		v, err := strconv.ParseInt(infoField(info, field), 10, 64)
		if err != nil {
			t.Fatalf("INFO raft of %s: %s: %v", c.nodes[i].id, field, err)
		}
		return v
	}
	entries, ops := raftInt(leader, "raft_entries_proposed"), raftInt(leader, "raft_ops_proposed")
	followerEntries := raftInt(follower, "raft_entries_proposed")

	for _, cmd := range [][]string{
		{"MULTI"},
		{"CL.THROTTLE", "tx", "2", "1", "10"},
		{"EXISTS", "tx"},
		{"KEYS", "tx*"},
		{"CL.THROTTLE", "tx", "2", "1", "10"},
		{"CL.PEEK", "tx", "2", "1", "10", "0"},
		{"PING"},
		{"EXEC"},
	} {
		fc.send(cmd...)
	}
	if err := fc.flush(); err != nil {
		t.Fatal(err)
	}
	for i, w := range []want{wantStatus("OK"), wantStatus("QUEUED"), wantStatus("QUEUED"),
		wantStatus("QUEUED"), wantStatus("QUEUED"), wantStatus("QUEUED"), wantStatus("QUEUED")} {
		if r, err := fc.read(); err != nil || !w.matches(r) {
			t.Fatalf("reply %d: %v, %v; want %v", i, r, err, w)
		}
	}
	r, err := fc.read()
	if err != nil {
		t.Fatal(err)
	}
	wantExec := `[[0 3 2 -1 10] 1 ["tx"] [0 3 1 -1 20] [0 3 1 -1 20] +PONG]`
	if r.String() != wantExec {
		t.Fatalf("EXEC on follower %s = %v, want %s", c.nodes[follower].id, r, wantExec)
	}
	if got := raftInt(leader, "raft_entries_proposed") - entries; got != 1 {
		t.Errorf("the leader proposed %d entries for the forwarded transaction, want 1", got)
	}
	if got := raftInt(leader, "raft_ops_proposed") - ops; got != 5 {
		t.Errorf("the leader proposed %d requests for the forwarded transaction, want its 5", got)
	}
	if got := raftInt(leader, "raft_last_entry_ops"); got != 5 {
		t.Errorf("the leader's last entry held %d requests, want the transaction's 5", got)
	}
	if got := raftInt(follower, "raft_entries_proposed") - followerEntries; got != 0 {
		t.Errorf("the follower proposed %d entries itself; it must forward", got)
	}

	// Concurrent transactions on every node, each taking twice from one
	// key that cannot refill: each transaction's two decisions are
	// adjacent (remaining r, then r-1) and no remaining is seen twice.
	const clients, txs = 2, 15
	const limit = 10000
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for node := range 3 {
		for cl := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := dialRESP(c.nodes[node].addr())
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.close()
				for tx := range txs {
					for _, cmd := range [][]string{{"MULTI"}, {"CL.THROTTLE", "pair", strconv.Itoa(limit - 1), "1", "86400"},
						{"CL.THROTTLE", "pair", strconv.Itoa(limit - 1), "1", "86400"}, {"EXEC"}} {
						conn.send(cmd...)
					}
					if err := conn.flush(); err != nil {
						t.Error(err)
						return
					}
					var exec reply
					for range 4 {
						if exec, err = conn.read(); err != nil {
							t.Errorf("%s client %d tx %d: %v", c.nodes[node].id, cl, tx, err)
							return
						}
					}
					if exec.kind != '*' || len(exec.elems) != 2 {
						t.Errorf("%s: EXEC = %v", c.nodes[node].id, exec)
						return
					}
					first, ok1 := exec.elems[0].ints()
					second, ok2 := exec.elems[1].ints()
					if !ok1 || !ok2 {
						t.Errorf("%s: EXEC = %v", c.nodes[node].id, exec)
						return
					}
					if first[2]-1 != second[2] {
						t.Errorf("%s: a transaction's decisions were not adjacent: remaining %d then %d", c.nodes[node].id, first[2], second[2])
					}
					mu.Lock()
					for _, rem := range []int64{first[2], second[2]} {
						if seen[rem] {
							t.Errorf("remaining %d acknowledged twice", rem)
						}
						seen[rem] = true
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if want := 3 * clients * txs * 2; len(seen) != want {
		t.Errorf("%d distinct decisions, want %d", len(seen), want)
	}
}
