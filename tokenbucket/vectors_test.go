package tokenbucket_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/vectors"
	"github.com/redcell/redcell/slidinglog"
	"github.com/redcell/redcell/tokenbucket"
)

// This file replays tb_sl.jsonl (internal/vectors) at engine level with
// injected time: every TB.*, SL.* and keyspace step, and the few
// CL.THROTTLE steps that share keys with them. The keyspace is a map of
// states whose lifetimes come from the packages' own rules (a key exists
// iff now < Expire; PTTL is tokenbucket.PTTL / slidinglog.PTTL), and every
// command runs the contract's validation order: parse (arity, integers,
// options, ranges, clock-free overflow), CheckAt(now), WRONGTYPE, decide.
// The harness lives here because several scenarios mix both families on
// one key; it imports slidinglog for the SL steps.

type family uint8

const (
	famNone family = iota
	famCL
	famGreedy
	famInterval
	famSL
)

type entry struct {
	fam   family
	tb    tokenbucket.State
	sl    slidinglog.State
	clTAT int64
}

// keyspace maps a key to its entry; an entry that is not live at now is
// the same as a missing key, exactly as the shard treats it.
type keyspace struct {
	keys    map[string]entry
	scratch []byte
}

func (ks *keyspace) get(key string, now int64) (entry, bool) {
	e, ok := ks.keys[key]
	if !ok {
		return entry{}, false
	}
	switch e.fam {
	case famCL:
		ok = e.clTAT > now
	case famGreedy, famInterval:
		ok = tokenbucket.Live(e.tb.Expire, now)
	case famSL:
		ok = slidinglog.Live(e.sl.Expire, now)
	default:
		ok = false
	}
	if !ok {
		delete(ks.keys, key) // what the sweeper would do, at any time
		return entry{}, false
	}
	return e, true
}

const (
	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errInteger   = "ERR value is not an integer or out of range"
)

func wrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// result is a decoded reply: ints (limiter arrays), one integer, a status
// string, or an error text.
type result struct {
	ints []int64
	n    *int64
	str  *string
	err  string
}

func (r result) String() string {
	switch {
	case r.err != "":
		return "error " + strconv.Quote(r.err)
	case r.n != nil:
		return strconv.FormatInt(*r.n, 10)
	case r.str != nil:
		return strconv.Quote(*r.str)
	}
	return fmt.Sprint(r.ints)
}

func intResult(n int64) result    { return result{n: &n} }
func strResult(s string) result   { return result{str: &s} }
func errResult(s string) result   { return result{err: s} }
func arrResult(a [5]int64) result { return result{ints: a[:]} }

func asBytes(args []string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// exec runs one command at now.
func (ks *keyspace) exec(t *testing.T, now int64, args []string) result {
	t.Helper()
	name := strings.ToLower(args[0])
	switch name {
	case "tb.take", "tb.peek":
		return ks.tb(t, name, now, args)
	case "sl.hit", "sl.peek":
		return ks.sl(t, name, now, args)
	case "cl.throttle":
		return ks.cl(t, now, args)
	case "del", "unlink":
		if len(args) < 2 {
			return errResult(wrongArgs(name))
		}
		var n int64
		for _, k := range args[1:] {
			if _, ok := ks.get(k, now); ok {
				delete(ks.keys, k)
				n++
			}
		}
		return intResult(n)
	case "exists":
		if len(args) < 2 {
			return errResult(wrongArgs(name))
		}
		var n int64
		for _, k := range args[1:] {
			if _, ok := ks.get(k, now); ok {
				n++
			}
		}
		return intResult(n)
	case "pttl":
		if len(args) != 2 {
			return errResult(wrongArgs(name))
		}
		e, ok := ks.get(args[1], now)
		switch {
		case !ok:
			return intResult(-2)
		case e.fam == famGreedy || e.fam == famInterval:
			return intResult(tokenbucket.PTTL(e.tb.Expire, now))
		case e.fam == famSL:
			return intResult(slidinglog.PTTL(e.sl.Expire, now))
		}
		t.Fatalf("PTTL of a CL key is not modelled here")
	case "type":
		if len(args) != 2 {
			return errResult(wrongArgs(name))
		}
		e, _ := ks.get(args[1], now)
		return strResult(map[family]string{famNone: "none", famCL: "string", famGreedy: "tokenbucket",
			famInterval: "tokenbucket", famSL: "slidinglog"}[e.fam])
	}
	t.Fatalf("command %q is not modelled", args[0])
	return result{}
}

func (ks *keyspace) tb(t *testing.T, name string, now int64, args []string) result {
	t.Helper()
	key, p, err := tokenbucket.Parse(asBytes(args))
	if err == tokenbucket.ErrArity {
		return errResult(wrongArgs(name))
	}
	if err != nil {
		return errResult(err.Error())
	}
	if err := p.CheckAt(now); err != nil {
		return errResult(err.Error())
	}
	fam := famGreedy
	if p.Interval {
		fam = famInterval
	}
	e, live := ks.get(string(key), now)
	if live && e.fam != fam {
		return errResult(errWrongType)
	}
	peek, err := tokenbucket.Peek(e.tb, now, p)
	if err != nil {
		t.Fatalf("Peek: %v", err)
	}
	if name == "tb.peek" {
		return arrResult(peek.Ints())
	}
	r, next, o := tokenbucket.Take(e.tb, now, p)
	if r != peek {
		t.Errorf("Peek %v != Take %v", peek, r)
	}
	switch o {
	case tokenbucket.Keep:
		if next != e.tb {
			t.Errorf("Keep changed the state: %+v -> %+v", e.tb, next)
		}
	case tokenbucket.Store:
		if next.Expire <= now {
			t.Errorf("Store of a state that is not live: %+v at %d", next, now)
		}
		ks.keys[string(key)] = entry{fam: fam, tb: next}
	case tokenbucket.Delete:
		if !live {
			t.Errorf("Delete of a missing key")
		}
		delete(ks.keys, string(key))
	default:
		t.Fatalf("outcome %v", o)
	}
	return arrResult(r.Ints())
}

func (ks *keyspace) sl(t *testing.T, name string, now int64, args []string) result {
	t.Helper()
	parse := slidinglog.ParseHit
	if name == "sl.peek" {
		parse = slidinglog.ParsePeek
	}
	key, p, err := parse(asBytes(args))
	if err == slidinglog.ErrArity {
		return errResult(wrongArgs(name))
	}
	if err != nil {
		return errResult(err.Error())
	}
	if err := p.CheckAt(now); err != nil {
		return errResult(err.Error())
	}
	e, live := ks.get(string(key), now)
	if live && e.fam != famSL {
		return errResult(errWrongType)
	}
	if name == "sl.peek" {
		r, err := slidinglog.Peek(e.sl, now, p)
		if err != nil {
			t.Fatalf("Peek: %v", err)
		}
		return arrResult(r.Ints())
	}
	peek, err := slidinglog.Peek(e.sl, now, p)
	if err != nil {
		t.Fatalf("Peek: %v", err)
	}
	r, next, o := slidinglog.Hit(e.sl, now, p, ks.scratch[:0])
	if !p.DeniedCount && r != peek { // rule 32: SL.PEEK is SL.HIT … DENIED FREE
		t.Errorf("Peek %v != Hit %v", peek, r)
	}
	switch o {
	case slidinglog.Keep:
	case slidinglog.Store:
		if next.Expire <= now {
			t.Errorf("Store of a state that is not live: expire %d at %d", next.Expire, now)
		}
		runs, err := slidinglog.Decode(nil, next.Log)
		if err != nil {
			t.Fatalf("stored log does not decode: %v", err)
		}
		var total int64
		for _, run := range runs {
			total += run.Count
		}
		if total > p.Limit {
			t.Errorf("stored %d entries, limit %d", total, p.Limit)
		}
		ks.scratch = next.Log
		next.Log = slices.Clone(next.Log) // the keyspace keeps its own copy
		ks.keys[string(key)] = entry{fam: famSL, sl: next}
	default:
		t.Fatalf("outcome %v", o)
	}
	return arrResult(r.Ints())
}

// cl runs CL.THROTTLE through gcra with the simple "live while TAT > now"
// rule; the vectors only use it to put a CL key next to TB and SL keys.
func (ks *keyspace) cl(t *testing.T, now int64, args []string) result {
	t.Helper()
	if len(args) != 5 && len(args) != 6 {
		t.Fatalf("CL.THROTTLE arity is not modelled: %q", args)
	}
	v := [4]int64{0, 0, 0, 1}
	for i, a := range args[2:] {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			t.Fatalf("CL.THROTTLE argument %q", a)
		}
		v[i] = n
	}
	p, err := gcra.NewParams(v[0], v[1], v[2], v[3])
	if err != nil {
		t.Fatalf("CL.THROTTLE: %v", err)
	}
	e, live := ks.get(args[1], now)
	if live && e.fam != famCL {
		return errResult(errWrongType)
	}
	r, tat, o := gcra.Throttle(e.clTAT, live, now, p)
	if o != gcra.Keep && tat > now {
		ks.keys[args[1]] = entry{fam: famCL, clTAT: tat}
	}
	return arrResult([5]int64{r.Limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter})
}

func expected(t *testing.T, step vectors.Step) result {
	t.Helper()
	e, err := step.Expected()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case e.Err != nil:
		return errResult(*e.Err)
	case e.Int != nil:
		return intResult(*e.Int)
	case e.Str != nil:
		return strResult(*e.Str)
	}
	return result{ints: e.Ints}
}

func equal(a, b result) bool {
	return a.String() == b.String() && (a.ints == nil) == (b.ints == nil)
}

// TestVectors_TBSL replays every scenario of tb_sl.jsonl and requires every
// reply to match exactly, with no exceptions.
func TestVectors_TBSL(t *testing.T) {
	scenarios, err := vectors.Load("tb_sl.jsonl")
	if err != nil {
		t.Fatal(err) // never skip: a missing contract must not look like a pass
	}
	counts := map[string]int{}
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) {
			ks := &keyspace{keys: map[string]entry{}}
			for i, step := range s.Steps {
				want := expected(t, step)
				got := ks.exec(t, step.TimeNs, step.Args)
				if !equal(got, want) {
					t.Fatalf("step %d at %d %q:\n got %v\nwant %v", i, step.TimeNs, step.Args, got, want)
				}
				counts[strings.ToLower(step.Args[0])]++
			}
		})
	}
	// The file's size is pinned by internal/vectors; this guards against the
	// harness silently skipping a family.
	for _, name := range []string{"tb.take", "tb.peek", "sl.hit", "sl.peek", "pttl", "exists", "type", "del"} {
		if counts[name] == 0 {
			t.Errorf("no %s step replayed", name)
		}
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total < 500 {
		t.Errorf("replayed only %d steps: %v", total, counts)
	}
	t.Logf("replayed %d steps: %v", total, counts)
}
