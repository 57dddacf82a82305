package systemtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// scanPage parses a SCAN reply: the cursor (a bulk string) and the keys.
func scanPage(t *testing.T, r reply) (string, []string) {
	t.Helper()
	if r.kind != '*' || len(r.elems) != 2 || r.elems[0].kind != '$' || r.elems[1].kind != '*' {
		t.Fatalf("SCAN reply %v: want [cursor, [keys…]]", r)
	}
	var keys []string
	for _, e := range r.elems[1].elems {
		if e.kind != '$' {
			t.Fatalf("SCAN key %v is not a bulk string", e)
		}
		keys = append(keys, e.str)
	}
	return r.elems[0].str, keys
}

// TestScanWhileTheKeyspaceChanges runs a SCAN to its end (COUNT 7, MATCH)
// while another client keeps creating and deleting keys of every family,
// after a hundred keys' lifetimes ended (their records are reclaimed by the
// sweeps those writes trigger, which compacts and shrinks the tables under
// the scan). Every key that stayed live is returned exactly once, no
// lapsed key ever; KEYS and INFO keyspace agree (lapsed keys not counted,
// avg_ttl the real average); SCAN inside MULTI answers its page in EXEC's
// array.
func TestScanWhileTheKeyspaceChanges(t *testing.T) {
	n := startTestNode(t, "scan")
	c := mustDial(t, n.addr())
	base := freshBase(t, c)
	const stable = 400
	cmds := []string{"CL.THROTTLE %s 9 1 3600", "TB.TAKE %s 10 1 3600000", "TB.TAKE %s 10 1 3600000 INTERVAL", "SL.HIT %s 10 3600000"}
	shortCmds := []string{"CL.THROTTLE %s 0 1 1", "TB.TAKE %s 5 5 1000", "SL.HIT %s 5 1000", "TB.TAKE %s 5 5 1000 INTERVAL"}
	for i := 0; i < stable; i++ {
		c.send(strings.Fields(fmt.Sprintf(cmds[i%4], fmt.Sprintf("stable:%03d", i)))...)
		c.send(strings.Fields(fmt.Sprintf(shortCmds[i%4], fmt.Sprintf("short:%03d", i)))...) // gone after 1 s
	}
	for i, r := range readN(t, c, 2*stable) {
		if v, ok := r.ints(); !ok || len(v) != 5 || v[0] != 0 {
			t.Fatalf("setup reply %d: %v", i, r)
		}
	}
	setClock(t, c, base+2*second) // every short key has lapsed; none need be swept yet

	// The churn: create and delete keys of every family until the scan ends.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	churnErr := make(chan string, 1)
	go func() {
		defer wg.Done()
		w := mustDial(t, n.addr())
		defer w.close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("churn:%d", i)
			w.send(strings.Fields(fmt.Sprintf(cmds[i%4], k))...)
			if i >= 50 {
				w.send("DEL", fmt.Sprintf("churn:%d", i-50))
			}
			if err := w.flush(); err != nil {
				churnErr <- err.Error()
				return
			}
			for j := 0; j < 1+btoi(i >= 50); j++ {
				if r, err := w.read(); err != nil || r.isErr() {
					churnErr <- fmt.Sprintf("churn %s: %v %v", k, r, err)
					return
				}
			}
		}
	}()

	seen := map[string]int{}
	cursor, calls := "0", 0
	for {
		r := mustDo(t, c, "SCAN", cursor, "MATCH", "s*", "COUNT", "7")
		var keys []string
		cursor, keys = scanPage(t, r)
		for _, k := range keys {
			seen[k]++
		}
		calls++
		if cursor == "0" {
			break
		}
		if calls > 100_000 {
			t.Fatal("SCAN does not end")
		}
	}
	close(stop)
	wg.Wait()
	select {
	case e := <-churnErr:
		t.Fatal(e)
	default:
	}
	for i := 0; i < stable; i++ {
		if k := fmt.Sprintf("stable:%03d", i); seen[k] != 1 {
			t.Errorf("%s returned %d times, want once", k, seen[k])
		}
	}
	for k := range seen {
		if strings.HasPrefix(k, "short:") {
			t.Errorf("SCAN returned %s after its lifetime", k)
		}
	}
	t.Logf("SCAN took %d calls", calls)

	keys := mustDo(t, c, "KEYS", "short:*")
	if keys.kind != '*' || len(keys.elems) != 0 {
		t.Errorf("KEYS short:* after their lifetime: %v", keys)
	}
	if r := mustDo(t, c, "KEYS", "stable:*"); r.kind != '*' || len(r.elems) != stable {
		t.Errorf("KEYS stable:*: %d keys, want %d", len(r.elems), stable)
	}
	dbsize := mustDo(t, c, "DBSIZE")
	info := mustDo(t, c, "INFO", "keyspace")
	db0 := infoField(info.str, "db0")
	var keysN, expires, avg int64
	if _, err := fmt.Sscanf(db0, "keys=%d,expires=%d,avg_ttl=%d", &keysN, &expires, &avg); err != nil {
		t.Fatalf("INFO keyspace db0 %q: %v", db0, err)
	}
	if keysN != dbsize.num || expires != keysN {
		t.Errorf("INFO keyspace %q, DBSIZE %d: lapsed keys counted?", db0, dbsize.num)
	}
	// Every live key holds one unit of a 10-per-hour limiter, taken at base
	// (stable keys, 3598 s left) or at base+2 s (churn keys, 3600 s left).
	if avg < 3_598_000 || avg > 3_600_000 {
		t.Errorf("INFO keyspace avg_ttl %d ms: not the keys' average remaining lifetime", avg)
	}

	// SCAN inside MULTI: one page in EXEC's array.
	expectReply(t, c, wantStatus("OK"), "MULTI")
	expectReply(t, c, wantStatus("QUEUED"), "SCAN", "0", "MATCH", "stable:00?", "COUNT", "100000")
	exec := mustDo(t, c, "EXEC")
	if exec.kind != '*' || len(exec.elems) != 1 {
		t.Fatalf("EXEC: %v", exec)
	}
	cur, page := scanPage(t, exec.elems[0])
	if cur != "0" || len(page) != 10 {
		t.Errorf("SCAN in MULTI: cursor %s, %d keys %v, want 0 and stable:000…009", cur, len(page), page)
	}
	n.mustStop(t)
}
