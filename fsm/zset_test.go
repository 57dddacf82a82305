package fsm_test

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/request"
)

// The sorted-set family in the state machine: what redis-server cannot
// check (the systemtest compares replies with it): the value's order and
// count against a model over long random sequences (both ZADD paths, the
// prefix cut, the large ZREM), that a command which changes nothing leaves
// the record untouched, and that the state restores from a snapshot.

// zreply renders a sorted-set command's result.
func zreply(t testing.TB, e *engine, now int64, line string) string {
	t.Helper()
	_, res, text := e.exec(t, now, strings.Fields(line))
	if text != "" {
		return "-" + text
	}
	var items []string
	request.Items(res.Data, func(b []byte) { items = append(items, string(b)) })
	switch res.Kind {
	case request.KindInt:
		return strconv.FormatInt(res.Ints[0], 10)
	case request.KindNil:
		return "(nil)"
	case request.KindDouble:
		return "," + string(res.Data)
	case request.KindArray, request.KindScored:
		return "[" + strings.Join(items, " ") + "]"
	case request.KindError:
		return "-" + res.Err.Text()
	}
	return fmt.Sprintf("kind %d", res.Kind)
}

// zmodel is a sorted set as a map, rendered in Redis's order.
type zmodel map[string]float64

func (m zmodel) withScores() string {
	type el struct {
		m string
		s float64
	}
	var els []el
	for k, v := range m {
		els = append(els, el{k, v})
	}
	slices.SortFunc(els, func(a, b el) int {
		if c := cmp.Compare(a.s, b.s); c != 0 {
			return c
		}
		return strings.Compare(a.m, b.m)
	})
	var parts []string
	for _, x := range els {
		s := strconv.FormatFloat(x.s, 'g', 17, 64)
		if math.IsInf(x.s, 1) {
			s = "inf"
		} else if math.IsInf(x.s, -1) {
			s = "-inf"
		}
		parts = append(parts, x.m, s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestZsetAgainstModel: long random sequences of ZADD (a few pairs or
// many, with NX/XX/GT/LT), ZREM (few or many members), ZREMRANGEBYSCORE
// and ZREMRANGEBYRANK keep the value in order and its count right, as a
// map model says; the state then restores from its snapshot unchanged (the
// restore checks every value).
func TestZsetAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 33))
	e := newEngine(4)
	m := zmodel{}
	member := func() string { return "m" + strconv.Itoa(r.IntN(40)) }
	score := func() float64 { return float64(r.IntN(20)) / 4 }
	for i := 0; i < 3000; i++ {
		var line string
		switch op := r.IntN(10); {
		case op < 5:
			flag := []string{"", "NX ", "XX ", "GT ", "LT ", "XX GT "}[r.IntN(6)]
			n := 1 + r.IntN(3)
			if r.IntN(4) == 0 {
				n = 9 + r.IntN(20) // past zaddBulk: the sorting path
			}
			line = "ZADD z " + flag
			for j := 0; j < n; j++ {
				mb, s := member(), score()
				line += strconv.FormatFloat(s, 'g', -1, 64) + " " + mb + " "
				old, found := m[mb]
				switch {
				case found && strings.Contains(flag, "NX"), !found && strings.Contains(flag, "XX"):
				case found && (strings.Contains(flag, "GT") && s <= old || strings.Contains(flag, "LT") && s >= old):
				default:
					m[mb] = s
				}
			}
		case op < 7:
			n := 1 + r.IntN(2)
			if r.IntN(3) == 0 {
				n = 9 + r.IntN(10)
			}
			line = "ZREM z"
			for j := 0; j < n; j++ {
				mb := member()
				line += " " + mb
				delete(m, mb)
			}
		case op < 9:
			lo, hi := score(), score()
			line = fmt.Sprintf("ZREMRANGEBYSCORE z %g %g", lo, hi)
			for k, v := range m {
				if v >= lo && v <= hi {
					delete(m, k)
				}
			}
		default:
			// The model's ranks come from its own order.
			start, stop := r.IntN(5), r.IntN(5)-2
			line = fmt.Sprintf("ZREMRANGEBYRANK z %d %d", start, stop)
			all := strings.Fields(strings.Trim(m.withScores(), "[]"))
			n := len(all) / 2
			s, st := start, stop
			if st < 0 {
				st += n
			}
			for j := s; j <= st && j < n; j++ {
				delete(m, all[2*j])
			}
		}
		zreply(t, e, t0, line)
		if got, want := zreply(t, e, t0, "ZRANGE z 0 -1 WITHSCORES"), m.withScores(); got != want {
			t.Fatalf("after %s:\n got  %s\n want %s", line, got, want)
		}
		if got := zreply(t, e, t0, "ZCARD z"); got != strconv.Itoa(len(m)) {
			t.Fatalf("after %s: ZCARD %s, the model has %d", line, got, len(m))
		}
		if len(m) == 0 && zreply(t, e, t0, "EXISTS z") != "0" {
			t.Fatalf("after %s: an empty sorted set exists", line)
		}
		if i%500 == 0 {
			restored := newEngine(2)
			if err := restored.f.Restore(io.NopCloser(strings.NewReader(snapshotOf(t, e.f)))); err != nil {
				t.Fatalf("restore after %s: %v", line, err)
			}
			if got := zreply(t, restored, t0, "ZRANGE z 0 -1 WITHSCORES"); got != m.withScores() {
				t.Fatalf("restored after %s: %s", line, got)
			}
		}
	}
}

// TestZsetUnchangedKeepsRecord: a command that changes nothing (ZADD of a
// present member with its score, NX on a present member, XX on a missing
// one, GT that does not raise, ZREM of a missing member, an empty range
// removal, a NaN increment, WRONGTYPE) leaves every record as it was, as
// WATCH needs.
func TestZsetUnchangedKeepsRecord(t *testing.T) {
	e := newEngine(2)
	zreply(t, e, t0, "ZADD z 1 a 2 b inf c 0 zero")
	zreply(t, e, t0, "SET s v")
	before := recordsOf(t, e.f)
	for _, line := range []string{
		"ZADD z 1 a", "ZADD z -0 zero 2 b", "ZADD z NX 5 a", "ZADD z XX 5 nope", "ZADD z GT 0 a", "ZADD z LT 3 b",
		"ZADD z INCR NX 1 a", "ZADD z INCR 0 a", "ZINCRBY z -inf c", "ZREM z nope", "ZREM z x y z w v u t s r q",
		"ZREMRANGEBYSCORE z 5 6", "ZREMRANGEBYSCORE z (1 (2", "ZREMRANGEBYRANK z 5 6", "ZADD s 1 a", "ZREM s a",
		"ZADD nokey XX 1 a", "ZREM nokey a", "ZREMRANGEBYRANK nokey 0 -1",
		"ZADD z 1 a 2 b 1 a 2 b 1 a 2 b 1 a 2 b 1 a 2 b", // the bulk path
	} {
		zreply(t, e, t0, line)
		if recordsOf(t, e.f) != before {
			t.Errorf("%s changed the records", line)
			before = recordsOf(t, e.f)
		}
	}
}

// TestZsetSlidingLog: the rate limiter's pipeline (ZADD now, ZREMRANGEBYSCORE
// -inf now-window, ZCARD) over many requests keeps exactly the requests of
// the window, as long as the run lasts.
func TestZsetSlidingLog(t *testing.T) {
	e := newEngine(2)
	const window = 1000
	for i := int64(0); i < 5000; i++ {
		now := 1_700_000_000_000 + i*37
		if got := zreply(t, e, t0, fmt.Sprintf("ZADD rl %d r%d", now, i)); got != "1" {
			t.Fatalf("ZADD %d: %s", i, got)
		}
		zreply(t, e, t0, fmt.Sprintf("ZREMRANGEBYSCORE rl -inf %d", now-window))
		want := min(i+1, (window-1)/37+1)
		if got := zreply(t, e, t0, "ZCARD rl"); got != strconv.FormatInt(want, 10) {
			t.Fatalf("request %d: ZCARD %s, want %d", i, got, want)
		}
	}
}

// TestZsetRefusesCorruptSnapshotValues: a snapshot whose sorted set is out
// of order, holds a member twice, a NaN score, a truncated element, or
// says it has another count is refused at restore, never applied.
func TestZsetRefusesCorruptSnapshotValues(t *testing.T) {
	el := func(s float64, m string) []byte { return fsm.ZsetElement(nil, s, m) }
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	good := cat(el(1, "a"), el(2, "b"))
	if err := fsm.CheckZsetValue(good, 2); err != nil {
		t.Fatalf("a good value refused: %v", err)
	}
	for name, tc := range map[string]struct {
		v     []byte
		count int64
	}{
		"empty":           {nil, 0},
		"wrong count":     {good, 3},
		"out of order":    {cat(el(2, "b"), el(1, "a")), 2},
		"members unorder": {cat(el(1, "b"), el(1, "a")), 2},
		"twice":           {cat(el(1, "a"), el(2, "a")), 2},
		"same element":    {cat(el(1, "a"), el(1, "a")), 2},
		"nan":             {el(math.NaN(), "a"), 1},
		"truncated":       {good[:len(good)-1], 2},
		"short":           {good[:5], 1},
		"negative count":  {good, -2},
	} {
		if err := fsm.CheckZsetValue(tc.v, tc.count); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
