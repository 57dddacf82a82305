package systemtest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The linearizability checker's own tests, on synthetic histories with
// explicit times. Nothing here needs the redcell binary.

// Shorthands for synthetic operations on key "k", burst 5 (capacity 6).
func thr(key string) limiterOp  { return limiterOp{Kind: "throttle", Key: key, Burst: 5} }
func peek(key string) limiterOp { return limiterOp{Kind: "peek", Key: key, Burst: 5} }
func del(key string) limiterOp  { return limiterOp{Kind: "del", Key: key} }

func allowed(remaining int64) limiterOut { return limiterOut{Remaining: remaining} }

var (
	limited    = limiterOut{Limited: 1}
	errUnknown = errors.New("TRYAGAIN the leader changed")
)

func deleted(n int64) limiterOut { return limiterOut{Deleted: n} }

func expectVerdict(t *testing.T, h *historyRecorder, want porcupine.CheckResult) {
	t.Helper()
	res, _, err := checkHistory(h, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res != want {
		t.Fatalf("porcupine says %q, want %q", res, want)
	}
}

// seqHistory records ops one after another, 10 ns apart, as client 0.
type seqHistory struct {
	h *historyRecorder
	t int64
}

func (s *seqHistory) do(op limiterOp, out limiterOut) *seqHistory {
	s.h.add(0, op, out, nil, s.t, s.t+5)
	s.t += 10
	return s
}

func TestLinearizabilitySequentialHistoryPasses(t *testing.T) {
	h := newHistoryRecorder()
	s := &seqHistory{h: h}
	s.do(peek("k"), allowed(5)).do(del("k"), deleted(0))
	for rem := int64(5); rem >= 0; rem-- {
		s.do(thr("k"), allowed(rem))
		if rem > 0 {
			s.do(peek("k"), allowed(rem-1)) // as if the call happened
		}
	}
	s.do(peek("k"), limited).do(thr("k"), limited).do(thr("k"), limited)
	s.do(thr("other"), allowed(5)) // another key, its own state
	s.do(del("k"), deleted(1)).do(del("k"), deleted(0))
	s.do(thr("k"), allowed(5)).do(peek("other"), allowed(4))
	expectVerdict(t, h, porcupine.Ok)

	// A PEEK claiming a unit is left when none is.
	h = newHistoryRecorder()
	s = &seqHistory{h: h}
	for rem := int64(5); rem >= 0; rem-- {
		s.do(thr("k"), allowed(rem))
	}
	s.do(peek("k"), allowed(0))
	expectVerdict(t, h, porcupine.Illegal)
}

func TestLinearizabilityConcurrentOverlapPasses(t *testing.T) {
	h := newHistoryRecorder()
	// Client 0 invokes first but is answered after client 1's unit: the
	// order 1, 0 explains both; a PEEK overlapping both sees either.
	h.add(0, thr("k"), allowed(4), nil, 0, 100)
	h.add(1, thr("k"), allowed(5), nil, 10, 90)
	h.add(2, peek("k"), allowed(5), nil, 5, 95)   // before both
	h.add(3, peek("k"), allowed(4), nil, 20, 80)  // between them
	h.add(4, peek("k"), allowed(3), nil, 50, 150) // after both
	h.add(0, thr("k"), allowed(3), nil, 110, 120)
	// A DEL racing a THROTTLE: the THROTTLE went first (DEL found the key).
	h.add(1, del("k"), deleted(1), nil, 130, 200)
	h.add(2, thr("k"), allowed(2), nil, 140, 160)
	h.add(0, peek("k"), allowed(5), nil, 210, 220)
	expectVerdict(t, h, porcupine.Ok)
}

func TestLinearizabilityOverAdmissionFails(t *testing.T) {
	h := newHistoryRecorder()
	// Two clients, overlapping, both told 5 remain: one unit admitted twice.
	h.add(0, thr("k"), allowed(5), nil, 0, 100)
	h.add(1, thr("k"), allowed(5), nil, 10, 90)
	expectVerdict(t, h, porcupine.Illegal)

	// The same after a completed admission, the second from another node's
	// view: a lost decision.
	h = newHistoryRecorder()
	h.add(0, thr("k"), allowed(5), nil, 0, 10)
	h.add(1, thr("k"), allowed(4), nil, 20, 30)
	h.add(2, thr("k"), allowed(4), nil, 40, 50)
	expectVerdict(t, h, porcupine.Illegal)

	// Admitted beyond the capacity.
	h = newHistoryRecorder()
	s := &seqHistory{h: h}
	for rem := int64(5); rem >= 0; rem-- {
		s.do(thr("k"), allowed(rem))
	}
	s.do(thr("k"), allowed(0))
	expectVerdict(t, h, porcupine.Illegal)
}

func TestLinearizabilityStaleReadFails(t *testing.T) {
	h := newHistoryRecorder()
	h.add(0, thr("k"), allowed(5), nil, 0, 10)
	h.add(1, peek("k"), allowed(5), nil, 20, 30) // answers as if nothing was taken
	expectVerdict(t, h, porcupine.Illegal)

	// The same PEEK overlapping the THROTTLE is fine (it may precede it).
	h = newHistoryRecorder()
	h.add(0, thr("k"), allowed(5), nil, 0, 10)
	h.add(1, peek("k"), allowed(5), nil, 5, 30)
	expectVerdict(t, h, porcupine.Ok)

	// A read that misses a completed DEL.
	h = newHistoryRecorder()
	h.add(0, thr("k"), allowed(5), nil, 0, 10)
	h.add(0, del("k"), deleted(1), nil, 20, 30)
	h.add(1, peek("k"), allowed(4), nil, 40, 50)
	expectVerdict(t, h, porcupine.Illegal)
}

func TestLinearizabilityUnknownOutcomes(t *testing.T) {
	// Unknown, then found applied.
	h := newHistoryRecorder()
	h.add(0, thr("k"), limiterOut{}, errUnknown, 0, 10)
	h.add(1, thr("k"), allowed(4), nil, 20, 30)
	expectVerdict(t, h, porcupine.Ok)

	// Unknown, never applied.
	h = newHistoryRecorder()
	h.add(0, thr("k"), limiterOut{}, errUnknown, 0, 10)
	h.add(1, thr("k"), allowed(5), nil, 20, 30)
	h.add(1, peek("k"), allowed(4), nil, 40, 50)
	expectVerdict(t, h, porcupine.Ok)

	// Unknown, applied later than its error came back (still in flight).
	h = newHistoryRecorder()
	h.add(0, thr("k"), limiterOut{Unknown: true}, nil, 0, 10)
	h.add(1, peek("k"), allowed(5), nil, 20, 30) // not applied yet
	h.add(1, thr("k"), allowed(4), nil, 40, 50)  // applied by now
	expectVerdict(t, h, porcupine.Ok)

	// An unknown outcome explains at most one unit.
	h = newHistoryRecorder()
	h.add(0, thr("k"), limiterOut{}, errUnknown, 0, 10)
	h.add(1, thr("k"), allowed(3), nil, 20, 30)
	expectVerdict(t, h, porcupine.Illegal)

	// It cannot have been applied before it was sent.
	h = newHistoryRecorder()
	h.add(1, thr("k"), allowed(4), nil, 0, 10)
	h.add(0, thr("k"), limiterOut{}, errUnknown, 20, 30)
	expectVerdict(t, h, porcupine.Illegal)

	// An unknown DEL may have reset the key later; unknown PEEKs are ignored.
	h = newHistoryRecorder()
	h.add(0, thr("k"), allowed(5), nil, 0, 10)
	h.add(1, del("k"), limiterOut{}, errUnknown, 20, 30)
	h.add(2, peek("k"), limiterOut{}, errUnknown, 25, 35)
	h.add(0, thr("k"), allowed(4), nil, 40, 50)
	h.add(0, thr("k"), allowed(5), nil, 60, 70)
	expectVerdict(t, h, porcupine.Ok)
}

func TestLinearizabilityRecorderTimesCalls(t *testing.T) {
	h := newHistoryRecorder()
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				_, _ = h.record(c, thr(fmt.Sprintf("k%d", i%3)), func() (limiterOut, error) {
					time.Sleep(time.Microsecond)
					return limiterOut{}, errUnknown
				})
			}
		}(c)
	}
	wg.Wait()
	total, unknown := h.counts()
	if total != 160 || unknown != 160 {
		t.Fatalf("counts %d, %d; want 160, 160", total, unknown)
	}
	for _, o := range h.porcupineHistory() {
		if o.Call < 0 || o.Return <= o.Call {
			t.Fatalf("operation timed [%d, %d]", o.Call, o.Return)
		}
	}

	// A real sequential counter, recorded through record, checks out.
	h = newHistoryRecorder()
	left := int64(6)
	for i := 0; i < 8; i++ {
		_, _ = h.record(0, thr("k"), func() (limiterOut, error) {
			if left == 0 {
				return limited, nil
			}
			left--
			return allowed(left), nil
		})
	}
	checkLinearizable(t, h, 10*time.Second)
}

// recordingTB stands for a test so that checkLinearizable's failures can be
// observed without failing this test.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errs   []string
	logged []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logged = append(r.logged, fmt.Sprintf(format, args...))
}

func TestLinearizabilityFailureWritesVisualization(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("REDCELL_TEST_ARTIFACTS", dir)
	h := newHistoryRecorder()
	h.add(0, thr("k"), allowed(5), nil, 0, 100)
	h.add(1, thr("k"), allowed(5), nil, 10, 90)
	rt := &recordingTB{TB: t}
	checkLinearizable(rt, h, 10*time.Second)
	if len(rt.errs) != 1 || !strings.Contains(rt.errs[0], "NOT linearizable") {
		t.Fatalf("errors %q; want one saying NOT linearizable", rt.errs)
	}
	var path string
	for _, l := range rt.logged {
		if p, ok := strings.CutPrefix(l, "porcupine visualization (open in a browser): "); ok {
			path = p
		}
	}
	if !strings.HasPrefix(path, dir) {
		t.Fatalf("logs %q; want the visualization's path under %s", rt.logged, dir)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "<html") || !strings.Contains(string(b), "throttle(k, burst 5)") {
		t.Fatalf("visualization %s: %d bytes, err %v", path, len(b), err)
	}

	// Malformed replies fail the check even when the history is fine.
	h = newHistoryRecorder()
	_, err = parseLimiterReply(thr("k"), reply{kind: '*', elems: []reply{{kind: ':', num: 0}, {kind: ':', num: 7}, {kind: ':', num: 5}, {kind: ':', num: -1}, {kind: ':', num: 1}}})
	if !errors.Is(err, errBadReply) {
		t.Fatalf("a limit of 7 for burst 5: err %v, want errBadReply", err)
	}
	h.add(0, thr("k"), limiterOut{}, err, 0, 10)
	rt = &recordingTB{TB: t}
	checkLinearizable(rt, h, 10*time.Second)
	if len(rt.errs) != 1 || !strings.Contains(rt.errs[0], "malformed") {
		t.Fatalf("errors %q; want one about the malformed reply", rt.errs)
	}

	// Mixed bursts on one key are refused.
	h = newHistoryRecorder()
	h.add(0, thr("k"), allowed(5), nil, 0, 10)
	h.add(0, limiterOp{Kind: "throttle", Key: "k", Burst: 6}, allowed(5), nil, 20, 30)
	rt = &recordingTB{TB: t}
	checkLinearizable(rt, h, 10*time.Second)
	if len(rt.errs) != 1 || !strings.Contains(rt.errs[0], "bursts") {
		t.Fatalf("errors %q; want one about mixed bursts", rt.errs)
	}
}

func TestLinearizabilityParsesReplies(t *testing.T) {
	fam := func(op limiterOp, tag string) limiterOp { op.Family = tag; return op }
	ctr := func(op limiterOp) limiterOp { return fam(op, "ct") }
	ints := func(v ...int64) reply {
		r := reply{kind: '*'}
		for _, x := range v {
			r.elems = append(r.elems, reply{kind: ':', num: x})
		}
		return r
	}
	cases := []struct {
		op   limiterOp
		r    reply
		want limiterOut
		bad  bool // errBadReply; otherwise an error reply when want.Unknown
	}{
		{thr("k"), ints(0, 6, 5, -1, 86400), allowed(5), false},
		{thr("k"), ints(1, 6, 0, 3600, 86400), limited, false},
		{peek("k"), ints(0, 6, 0, -1, 518400), allowed(0), false},
		{del("k"), reply{kind: ':', num: 1}, deleted(1), false},
		{del("k"), reply{kind: ':', num: 0}, deleted(0), false},
		{thr("k"), reply{kind: '-', str: "TRYAGAIN no leader"}, limiterOut{Unknown: true}, false},
		{del("k"), reply{kind: '-', str: "CLUSTERDOWN"}, limiterOut{Unknown: true}, false},
		{thr("k"), ints(0, 6, 6, -1, 0), limiterOut{Unknown: true}, true},     // remaining > burst
		{thr("k"), ints(1, 6, 0, -1, 0), limiterOut{Unknown: true}, true},     // limited without retry
		{thr("k"), ints(0, 6, 5, -1), limiterOut{Unknown: true}, true},        // 4 fields
		{del("k"), reply{kind: ':', num: 2}, limiterOut{Unknown: true}, true}, // one key
		{del("k"), reply{kind: '+', str: "OK"}, limiterOut{Unknown: true}, true},
		// The counter family: INCR's count and GET's, read as a limiter of
		// 6 units.
		{ctr(thr("k")), reply{kind: ':', num: 1}, allowed(5), false},
		{ctr(thr("k")), reply{kind: ':', num: 6}, allowed(0), false},
		{ctr(thr("k")), reply{kind: ':', num: 7}, limited, false},
		{ctr(peek("k")), reply{kind: '$', null: true}, allowed(5), false},
		{ctr(peek("k")), reply{kind: '$', str: "5"}, allowed(0), false},
		{ctr(peek("k")), reply{kind: '$', str: "6"}, limited, false},
		{ctr(peek("k")), reply{kind: '$', str: "x"}, limiterOut{Unknown: true}, true},
		{ctr(thr("k")), reply{kind: '$', str: "1"}, limiterOut{Unknown: true}, true},
		{ctr(thr("k")), reply{kind: '-', str: "TRYAGAIN no leader"}, limiterOut{Unknown: true}, false},
		// INCREX's [count, applied] and the list's RPUSH/LLEN lengths.
		{fam(thr("k"), "ix"), ints(1, 1), allowed(5), false},
		{fam(thr("k"), "ix"), ints(6, 1), allowed(0), false},
		{fam(thr("k"), "ix"), ints(6, 0), limited, false},
		{fam(thr("k"), "ix"), ints(5, 0), limiterOut{Unknown: true}, true}, // refused below the bound
		{fam(peek("k"), "ix"), reply{kind: '$', str: "6"}, limited, false},
		{fam(thr("k"), "lc"), reply{kind: ':', num: 2}, allowed(4), false},
		{fam(peek("k"), "lc"), reply{kind: ':', num: 0}, allowed(5), false},
		{fam(peek("k"), "lc"), reply{kind: ':', num: 6}, limited, false},
		{fam(thr("k"), "zc"), reply{kind: '$', str: "1"}, allowed(5), false},
		{fam(thr("k"), "zc"), reply{kind: '$', str: "7"}, limited, false},
		{fam(thr("k"), "zc"), reply{kind: '$', str: "1.5"}, limiterOut{Unknown: true}, true},
		{fam(peek("k"), "zc"), reply{kind: '$', null: true}, allowed(5), false},
		{fam(peek("k"), "zc"), reply{kind: '$', str: "3"}, allowed(2), false},
	}
	for i, c := range cases {
		got, err := parseLimiterReply(c.op, c.r)
		if got != c.want || errors.Is(err, errBadReply) != c.bad || (err != nil) != c.want.Unknown {
			t.Errorf("case %d: %s %v → %+v, %v; want %+v (bad %v)", i, c.op.Kind, c.r, got, err, c.want, c.bad)
		}
	}
	if got := strings.Join(ctr(thr("k")).args(), " ") + "; " + strings.Join(ctr(peek("k")).args(), " "); got != "INCR k; GET k" {
		t.Errorf("counter args %q", got)
	}
	if got := strings.Join(thr("k").args(), " "); got != "CL.THROTTLE k 5 1 86400" {
		t.Errorf("args %q", got)
	}
	if got := strings.Join(peek("k").args(), " "); got != "CL.PEEK k 5 1 86400" {
		t.Errorf("args %q", got)
	}
}
