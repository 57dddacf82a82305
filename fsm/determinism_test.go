package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/request"
)

// TestReplicasAreIdentical is the test design.md asks for: one random log
// applied to
//
//	A: 1 stripe, one entry per ApplyBatch;
//	B: 64 stripes, entries in ApplyBatch groups of 1–6;
//	C: restored from A's snapshot (Snapshot → Persist → Restore) at a
//	   random midpoint, then the rest of the log;
//
// must give the same result for every op and byte-identical snapshots at
// every sampled entry boundary. The log has CL.THROTTLE (allowed, limited,
// peeks, refunds, expire errors), DEL, FLUSHALL, the expiry commands
// (every option, deletion, PERSIST), strings and lists over a small key pool,
// stamps that mostly advance and sometimes go back, and non-command entries.
func TestReplicasAreIdentical(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		checkReplicas(t, seed, 1500)
	}
}

type logEntry struct {
	log *raft.Log
	ops int // 0 for a non-command entry
}

func randomLog(seed uint64, n int) []logEntry {
	g := newOpGen(seed, 40)
	stamp := int64(1_700_000_000_000_000_000)
	var out []logEntry
	for i := 0; i < n; i++ {
		index := uint64(i + 1)
		if g.rng.IntN(30) == 0 {
			typ := raft.LogNoop
			if g.rng.IntN(2) == 0 {
				typ = raft.LogBarrier
			}
			out = append(out, logEntry{log: &raft.Log{Type: typ, Index: index, Term: 1}})
			continue
		}
		switch r := g.rng.IntN(20); {
		case r == 0:
			stamp -= g.rng.Int64N(3e9) // a stamp behind the replicated clock
		case r < 3:
			stamp += g.rng.Int64N(20e9) // long idle gaps: keys expire
		default:
			stamp += g.rng.Int64N(300e6)
		}
		if g.rng.IntN(40) == 0 {
			stamp += 1e6 - stamp%1e6 // exactly on a millisecond (key expiry boundaries)
		}
		ops := make([]request.Request, 1+g.rng.IntN(12))
		for j := range ops {
			ops[j] = g.op()
			switch g.rng.IntN(9) {
			case 0:
				ops[j] = g.expiryOp()
			case 1, 2:
				ops[j] = g.stringOp()
			case 3:
				ops[j] = g.hashOp()
			case 4:
				ops[j] = g.listOp()
			case 5:
				ops[j] = g.setOp()
			case 6:
				ops[j] = g.increxOp()
			case 7:
				ops[j] = g.zsetOp()
			}
		}
		out = append(out, logEntry{log: commandLog(index, encodeEntry(stamp, ops)), ops: len(ops)})
	}
	return out
}

func checkReplicas(t *testing.T, seed uint64, n int) {
	entries := randomLog(seed, n)
	a, b, c := quietFSM(1), quietFSM(64), quietFSM(8)
	rng := newOpGen(seed+1000, 1).rng
	mid := n/4 + rng.IntN(n/2)
	resultsA := make([][]request.Result, n)

	compare := func(upto int) {
		t.Helper()
		sa, sb := snapshotBytes(t, a), snapshotBytes(t, b)
		if !bytes.Equal(sa, sb) {
			t.Fatalf("seed %d: after entry %d, snapshots of A (1 stripe) and B (64 stripes) differ:\n%x\n%x", seed, upto, sa, sb)
		}
		if upto >= mid {
			if sc := snapshotBytes(t, c); !bytes.Equal(sa, sc) {
				t.Fatalf("seed %d: after entry %d, snapshot of C (restored at %d) differs from A's:\n%x\n%x", seed, upto, mid, sc, sa)
			}
			if a.Clock() != c.Clock() {
				t.Fatalf("seed %d: after entry %d, clocks A %d, C %d", seed, upto, a.Clock(), c.Clock())
			}
		}
		if a.Clock() != b.Clock() {
			t.Fatalf("seed %d: after entry %d, clocks A %d, B %d", seed, upto, a.Clock(), b.Clock())
		}
	}

	for i := 0; i < n; {
		// One ApplyBatch for B covers entries [i, j); A takes them one by one.
		j := min(n, i+1+rng.IntN(6))
		logs := make([]*raft.Log, 0, j-i)
		for k := i; k < j; k++ {
			e := entries[k]
			logs = append(logs, e.log)
			out := a.ApplyBatch([]*raft.Log{e.log})
			if e.ops == 0 {
				if out[0] != nil {
					t.Fatalf("seed %d: a non-command entry answered %v", seed, out[0])
				}
			} else {
				resultsA[k] = takeResults(t, a, out[0])
				if len(resultsA[k]) != e.ops {
					t.Fatalf("seed %d: entry %d has %d ops, %d results", seed, k, e.ops, len(resultsA[k]))
				}
			}
			if k == mid {
				data := persist(t, a)
				if err := c.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
					t.Fatalf("seed %d: restoring A's snapshot at entry %d: %v", seed, k, err)
				}
				if got := snapshotBytes(t, c); !bytes.Equal(got, data) {
					t.Fatalf("seed %d: C's snapshot after Restore differs from the one it restored", seed)
				}
			} else if k > mid {
				out := c.ApplyBatch([]*raft.Log{e.log})
				if e.ops > 0 {
					if got := takeResults(t, c, out[0]); !equalResults(got, resultsA[k]) {
						t.Fatalf("seed %d: entry %d: C (restored at %d) answered %+v, A %+v", seed, k, mid, got, resultsA[k])
					}
				}
			}
		}
		outB := b.ApplyBatch(logs)
		if len(outB) != len(logs) {
			t.Fatalf("seed %d: ApplyBatch of %d logs returned %d responses", seed, len(logs), len(outB))
		}
		for k := i; k < j; k++ {
			if entries[k].ops == 0 {
				continue
			}
			if got := takeResults(t, b, outB[k-i]); !equalResults(got, resultsA[k]) {
				t.Fatalf("seed %d: entry %d: B answered %+v, A %+v", seed, k, got, resultsA[k])
			}
		}
		if b.AppliedIndex() != entries[j-1].log.Index || a.AppliedIndex() != b.AppliedIndex() {
			t.Fatalf("seed %d: applied index A %d, B %d, want %d", seed, a.AppliedIndex(), b.AppliedIndex(), entries[j-1].log.Index)
		}
		i = j
		compare(j - 1)
	}

	// The log must have exercised what it is meant to.
	var kinds [256]int
	errs, limited := 0, 0
	for _, rs := range resultsA {
		for _, r := range rs {
			kinds[r.Kind]++
			if r.Kind == request.KindThrottle && r.Ints[0] == 1 {
				limited++
			}
			if r.Kind == request.KindError {
				errs++
			}
		}
	}
	if kinds[request.KindThrottle] == 0 || limited == 0 || kinds[request.KindInt] == 0 || kinds[request.KindOK] == 0 || errs == 0 ||
		kinds[request.KindBulk] == 0 || kinds[request.KindNil] == 0 || kinds[request.KindBulks] == 0 ||
		kinds[request.KindArray] == 0 || kinds[request.KindNilArray] == 0 ||
		kinds[request.KindSet] == 0 || kinds[request.KindInts] == 0 || kinds[request.KindDoubles] == 0 {
		t.Errorf("seed %d: the log is too tame: throttle %d (limited %d), int %d, ok %d, errors %d",
			seed, kinds[request.KindThrottle], limited, kinds[request.KindInt], kinds[request.KindOK], errs)
	}
}

func equalResults(a, b []request.Result) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
