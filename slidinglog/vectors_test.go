package slidinglog_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/vectors"
	"github.com/redcell/redcell/slidinglog"
)

// This file replays the scenarios of tb_sl.jsonl that use only SL.* and
// keyspace commands, with injected time, over a map of states whose
// lifetimes come from this package (Live, PTTL). Scenarios that mix SL with
// TB or CL keys are replayed, with everything else, by tokenbucket's
// TestVectors_TBSL, which imports this package for the SL steps.

// slKeyspace maps keys to SL states; a state that is not live at now is a
// missing key.
type slKeyspace map[string]slidinglog.State

func (ks slKeyspace) get(key string, now int64) (slidinglog.State, bool) {
	st, ok := ks[key]
	if ok && !slidinglog.Live(st.Expire, now) {
		delete(ks, key)
		return slidinglog.State{}, false
	}
	return st, ok
}

// exec runs one command and renders the reply as the vector file does
// (JSON-ish: an array, an integer, a quoted string or {"error": ...}).
func (ks slKeyspace) exec(t *testing.T, now int64, args []string) string {
	t.Helper()
	name := strings.ToLower(args[0])
	arity := func() string {
		return fmt.Sprintf("error ERR wrong number of arguments for '%s' command", name)
	}
	switch name {
	case "sl.hit", "sl.peek":
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		parse := slidinglog.ParseHit
		if name == "sl.peek" {
			parse = slidinglog.ParsePeek
		}
		key, p, err := parse(b)
		if err == slidinglog.ErrArity {
			return arity()
		}
		if err == nil {
			err = p.CheckAt(now)
		}
		if err != nil {
			return "error " + err.Error()
		}
		st, _ := ks.get(string(key), now)
		peek, err := slidinglog.Peek(st, now, p)
		if err != nil {
			t.Fatalf("Peek: %v", err)
		}
		if name == "sl.peek" {
			return fmt.Sprint(peek.Ints())
		}
		r, next, o := slidinglog.Hit(st, now, p, nil)
		if !p.DeniedCount && r != peek {
			t.Errorf("Peek %v != Hit %v", peek, r)
		}
		switch o {
		case slidinglog.Store:
			if _, err := slidinglog.Decode(nil, next.Log); err != nil || next.Expire <= now {
				t.Fatalf("stored %x expiring at %d: %v", next.Log, next.Expire, err)
			}
			next.Log = slices.Clone(next.Log)
			ks[string(key)] = next
		case slidinglog.Keep:
		default:
			t.Fatalf("outcome %v", o)
		}
		return fmt.Sprint(r.Ints())
	case "exists", "del", "unlink":
		if len(args) < 2 {
			return arity()
		}
		n := 0
		for _, k := range args[1:] {
			if _, ok := ks.get(k, now); ok {
				n++
				if name != "exists" {
					delete(ks, k)
				}
			}
		}
		return fmt.Sprint(n)
	case "pttl", "type":
		if len(args) != 2 {
			return arity()
		}
		st, ok := ks.get(args[1], now)
		if name == "pttl" {
			return fmt.Sprint(slidinglog.PTTL(st.Expire, now))
		}
		if ok {
			return `"slidinglog"`
		}
		return `"none"`
	}
	t.Fatalf("not an SL or keyspace command: %q", args)
	return ""
}

func render(t *testing.T, step vectors.Step) string {
	e, err := step.Expected()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case e.Err != nil:
		return "error " + *e.Err
	case e.Int != nil:
		return fmt.Sprint(*e.Int)
	case e.Str != nil:
		return `"` + *e.Str + `"`
	}
	return fmt.Sprint(e.Ints)
}

func slOnly(s vectors.Scenario) bool {
	sl := false
	for _, st := range s.Steps {
		switch strings.ToLower(st.Args[0]) {
		case "sl.hit", "sl.peek":
			sl = true
		case "exists", "del", "unlink", "pttl", "type":
		default:
			return false
		}
	}
	return sl
}

func TestVectors_SL(t *testing.T) {
	scenarios, err := vectors.Load("tb_sl.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	replayed, steps := 0, 0
	for _, s := range scenarios {
		if !slOnly(s) {
			continue
		}
		replayed++
		t.Run(s.Name, func(t *testing.T) {
			ks := slKeyspace{}
			for i, step := range s.Steps {
				steps++
				if got, want := ks.exec(t, step.TimeNs, step.Args), render(t, step); got != want {
					t.Fatalf("step %d at %d %q:\n got %s\nwant %s", i, step.TimeNs, step.Args, got, want)
				}
			}
		})
	}
	if replayed < 14 || steps < 190 {
		t.Errorf("replayed %d SL-only scenarios, %d steps: the file or the filter changed", replayed, steps)
	}
	t.Logf("replayed %d SL-only scenarios, %d steps", replayed, steps)
}
