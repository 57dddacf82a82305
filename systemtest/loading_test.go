package systemtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Loading after kill -9, with the real binary: a node restarted on a data
// dir holding a snapshot and a long log after it answers every request at
// once while it restores and replays: LOADING (Redis's text) for commands
// that need the keyspace, with INFO persistence saying loading:1; then the
// correct answers, never TRYAGAIN or CLUSTERDOWN (a single node has nobody
// to wait for but itself).
const (
	loadingText    = "LOADING Redis is loading the dataset in memory"
	loadingWriters = 4
	loadingPerConn = 50_000 // decisions per writer and phase
	loadingPipe    = 1000
)

func TestLoadingAfterKillNine(t *testing.T) {
	t.Parallel()
	// Snapshots only when the test asks: the log after the snapshot is
	// what the restart replays.
	n := startTestNode(t, "loading", "--snapshot-threshold", "1000000000", "--snapshot-log-bytes", "1000000000000")
	c := mustDial(t, n.addr())

	// Distinct keys that live for a day: 200k before the snapshot, 200k
	// after it, and one probe key throttled once.
	write := func(phase string) {
		var wg sync.WaitGroup
		errs := make(chan error, loadingWriters)
		for w := 0; w < loadingWriters; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wc, err := dialRESP(n.addr())
				if err != nil {
					errs <- err
					return
				}
				defer wc.close()
				for lo := 0; lo < loadingPerConn; lo += loadingPipe {
					for i := lo; i < lo+loadingPipe; i++ {
						wc.send("CL.THROTTLE", fmt.Sprintf("ld:%s:%d:%d", phase, w, i), "9", "1", "86400")
					}
					if err := wc.flush(); err != nil {
						errs <- err
						return
					}
					for i := 0; i < loadingPipe; i++ {
						r, err := wc.read()
						if err != nil {
							errs <- err
							return
						}
						if ints, ok := r.ints(); !ok || ints[0] != 0 || ints[2] != 9 {
							errs <- fmt.Errorf("writing: got %v", r)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	write("a")
	if r := mustDo(t, c, "RAFT", "SNAPSHOT"); r.kind != ':' {
		t.Fatalf("RAFT SNAPSHOT: %v", r)
	}
	write("b")
	expectReply(t, c, wantInts(0, 10, 9, -1, 86400), "CL.THROTTLE", "ld:probe", "9", "1", "86400")
	const keys = 2*loadingWriters*loadingPerConn + 1
	expectReply(t, c, wantInt(keys), "DBSIZE")
	logOff := n.logSize()

	n.kill()
	if err := n.launch(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()

	// Poll with reads and writes until every one is answered correctly.
	var (
		loadingReplies, infoLoading int
		firstLoading, loaded        time.Duration
		throttled                   bool
	)
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var pc *respConn
	for {
		if time.Now().After(deadline) {
			t.Fatalf("not loaded %v after the restart (%d LOADING replies)", time.Since(start), loadingReplies)
		}
		select {
		case <-n.exited:
			t.Fatalf("the node exited after the restart: %v", n.exitErr)
		case <-tick.C:
		}
		if pc == nil {
			var err error
			if pc, err = dialRESP(n.addr()); err != nil {
				continue // not listening yet
			}
			defer pc.close()
		}
		pc.send("DBSIZE")
		pc.send("EXISTS", "ld:a:0:0", "ld:b:3:49999", "ld:none")
		if !throttled {
			pc.send("CL.THROTTLE", "ld:probe", "9", "1", "86400")
		}
		pc.send("INFO", "persistence")
		if err := pc.flush(); err != nil {
			t.Fatalf("sending to the restarted node: %v", err)
		}
		replies := make([]reply, 0, 4)
		for i := 0; i < 3+btoi(!throttled); i++ {
			r, err := pc.read()
			if err != nil {
				t.Fatalf("reading from the restarted node: %v", err)
			}
			replies = append(replies, r)
		}
		good := 0
		check := func(r reply, w want, what string) {
			switch {
			case r.isErr() && r.str == loadingText:
				loadingReplies++
				if firstLoading == 0 {
					firstLoading = time.Since(start)
				}
			case w.matches(r):
				good++
			default:
				t.Fatalf("%s %v after the restart: got %v, want %v or LOADING", what, time.Since(start), r, w)
			}
		}
		check(replies[0], wantInt(keys), "DBSIZE")
		check(replies[1], wantInt(2), "EXISTS")
		if !throttled {
			r := replies[2]
			if ints, ok := r.ints(); ok && len(ints) == 5 {
				if ints[0] != 0 || ints[1] != 10 || ints[2] != 8 || ints[3] != -1 {
					t.Fatalf("CL.THROTTLE ld:probe after the restart: %v, want the second decision (8 remaining)", r)
				}
				throttled = true
				good++
			} else {
				check(r, want{kind: '*'}, "CL.THROTTLE")
			}
		}
		info := replies[len(replies)-1]
		if strings.Contains(info.str, "loading:1\r\n") {
			infoLoading++
		}
		if good == len(replies)-1 && throttled {
			loaded = time.Since(start)
			if !strings.Contains(info.str, "loading:0\r\n") {
				t.Fatalf("answered, but INFO persistence says:\n%s", info.str)
			}
			break
		}
	}
	t.Logf("restart with %d keys (%d in the snapshot): first LOADING reply after %v, %d LOADING replies, INFO loading:1 %d times, all answered after %v",
		keys, loadingWriters*loadingPerConn, firstLoading, loadingReplies, infoLoading, loaded)
	if loadingReplies == 0 || infoLoading == 0 {
		t.Errorf("never saw the node loading (%d LOADING replies, %d INFO loading:1): the test proves nothing", loadingReplies, infoLoading)
	}
	if log := n.logSince(logOff); !strings.Contains(log, "restored from snapshot") || !strings.Contains(log, "msg=loaded") {
		t.Errorf("the log does not tell the restore and the end of loading:\n%s", lastLines(log, 40))
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
