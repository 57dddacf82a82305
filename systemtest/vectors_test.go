package systemtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/vectors"
)

// The contract's vectors (cl_throttle.jsonl and tb_sl.jsonl in
// internal/vectors) replayed over RESP against the real binary, each step at
// its own injected instant (DEBUG CLOCK SET).

type vectorScenario = vectors.Scenario

// expectedReply turns a vector step's reply into the harness's want.
func expectedReply(st vectors.Step) (want, error) {
	e, err := st.Expected()
	switch {
	case err != nil:
		return want{}, err
	case e.Ints != nil:
		return wantInts(e.Ints...), nil
	case e.Int != nil:
		return wantInt(*e.Int), nil
	case e.Str != nil:
		return wantStatus(*e.Str), nil
	default:
		return wantErr(*e.Err), nil
	}
}

// loadVectors reads a vector file; a missing or malformed file fails the
// test (the vectors are part of the contract, not optional), and so does a
// step that goes back in time (the replicated clock cannot).
func loadVectors(t testing.TB, name string) []vectorScenario {
	t.Helper()
	out, err := vectors.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out {
		for i := 1; i < len(s.Steps); i++ {
			if s.Steps[i].TimeNs < s.Steps[i-1].TimeNs {
				t.Fatalf("%s: scenario %q step %d goes back in time", name, s.Name, i)
			}
		}
	}
	return out
}

// needsOwnClock reports scenarios about overflow: their replies depend on
// the absolute time (now + horizon beyond int64), so they are replayed at
// their own t_ns on a fresh node rather than shifted.
func needsOwnClock(s vectorScenario) bool {
	return strings.Contains(strings.ToLower(s.Name+" "+s.Description), "overflow")
}

// peekOf is the PEEK that must answer what a limiter step answers, with
// the same arguments at the same instant, or nil: CL.PEEK for CL.THROTTLE,
// TB.PEEK for TB.TAKE, SL.PEEK for SL.HIT without DENIED (SL.PEEK is SL.HIT
// with DENIED FREE, and takes no DENIED option).
func peekOf(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	switch strings.ToLower(args[0]) {
	case "cl.throttle":
		return append([]string{"CL.PEEK"}, args[1:]...)
	case "tb.take":
		return append([]string{"TB.PEEK"}, args[1:]...)
	case "sl.hit":
		for _, a := range args[min(len(args), 4):] {
			if strings.EqualFold(a, "denied") {
				return nil
			}
		}
		return append([]string{"SL.PEEK"}, args[1:]...)
	}
	return nil
}

// TestVectorsOverRESP replays every CL.THROTTLE scenario and compares each
// reply exactly (integer kinds and error texts included).
func TestVectorsOverRESP(t *testing.T) {
	replayAllVectors(t, "cl_throttle.jsonl", false)
}

// TestVectorStepsWithPeek sends, before each CL.THROTTLE step, CL.PEEK with
// the same arguments at the same instant: it must answer what CL.THROTTLE
// then answers, and change nothing (EXISTS and PTTL equal around it).
func TestVectorStepsWithPeek(t *testing.T) {
	replayAllVectors(t, "cl_throttle.jsonl", true)
}

// TestTBSLVectorsOverRESP replays every scenario of tb_sl.jsonl (TB.*, SL.*,
// the keyspace steps and the CL steps that share their keys), sending
// before each TB.TAKE and SL.HIT step its PEEK, which must answer the same
// and change nothing.
func TestTBSLVectorsOverRESP(t *testing.T) {
	replayAllVectors(t, "tb_sl.jsonl", true)
}

func replayAllVectors(t *testing.T, file string, withPeek bool) {
	scenarios := loadVectors(t, file)
	n := sharedNode(t)
	c := mustDial(t, n.addr())
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			if needsOwnClock(sc) {
				replayAtOwnTime(t, sc, withPeek)
				return
			}
			// Replies depend only on time differences (the whole-second
			// rounding of secs() looks at differences too), so any integer
			// shift works; whole seconds keep the instants readable.
			first := sc.Steps[0].TimeNs
			shift := ceilSecond(max(0, replicatedClock(t, c)+second-first))
			replayScenario(t, c, sc, shift, withPeek)
		})
	}
}

// replayAtOwnTime replays a scenario unshifted on a node of its own.
func replayAtOwnTime(t *testing.T, sc vectorScenario, withPeek bool) {
	n := startTestNode(t, "vectors-own-clock")
	c := mustDial(t, n.addr())
	if clk := replicatedClock(t, c); clk > sc.Steps[0].TimeNs {
		t.Fatalf("fresh node's replicated clock %d is past the scenario's first instant %d", clk, sc.Steps[0].TimeNs)
	}
	replayScenario(t, c, sc, 0, withPeek)
	n.mustStop(t)
}

// maxStepFailures bounds the messages per scenario: after a wrong reply the
// following steps usually fail too, and the first ones say the most.
const maxStepFailures = 8

// replayScenario empties the keyspace at the scenario's first instant and
// replays its steps, each after freezing the clock at t_ns + shift.
func replayScenario(t *testing.T, c *respConn, sc vectorScenario, shift int64, withPeek bool) {
	t.Helper()
	setClock(t, c, sc.Steps[0].TimeNs+shift)
	expectReply(t, c, wantStatus("OK"), "FLUSHALL")
	failures := 0
	for i, st := range sc.Steps {
		w, _ := expectedReply(st)
		at := st.TimeNs + shift
		var problems []string
		if peek := peekOf(st.Args); withPeek && peek != nil {
			problems = stepWithPeek(t, c, st.Args, peek, at, w)
		} else {
			problems = stepPlain(t, c, st.Args, at, w)
		}
		for _, p := range problems {
			failures++
			if failures <= maxStepFailures {
				t.Errorf("step %d (t_ns %d, shift %+d): %s", i, st.TimeNs, shift, p)
			}
		}
	}
	if failures > maxStepFailures {
		t.Errorf("... and %d more problems in this scenario", failures-maxStepFailures)
	}
}

// stepPlain sets the clock and sends the step, pipelined; it returns what
// did not match.
func stepPlain(t *testing.T, c *respConn, args []string, at int64, w want) []string {
	c.send("DEBUG", "CLOCK", "SET", itoa(at))
	c.send(args...)
	rs := readN(t, c, 2)
	var problems []string
	if !wantStatus("OK").matches(rs[0]) {
		problems = append(problems, fmt.Sprintf("DEBUG CLOCK SET %d: got %v", at, rs[0]))
	}
	if !w.matches(rs[1]) {
		problems = append(problems, fmt.Sprintf("%s: got %v, want %v", quoteArgs(args), rs[1], w))
	}
	return problems
}

// stepWithPeek sends, in one pipeline at the frozen instant: EXISTS/PTTL,
// the PEEK, EXISTS/PTTL, then the limiter step.
func stepWithPeek(t *testing.T, c *respConn, args, peek []string, at int64, w want) []string {
	hasKey := len(args) >= 2
	c.send("DEBUG", "CLOCK", "SET", itoa(at))
	if hasKey {
		c.send("EXISTS", args[1])
		c.send("PTTL", args[1])
	}
	c.send(peek...)
	if hasKey {
		c.send("EXISTS", args[1])
		c.send("PTTL", args[1])
	}
	c.send(args...)
	count := 3
	if hasKey {
		count += 4
	}
	rs := readN(t, c, count)
	var problems []string
	if !wantStatus("OK").matches(rs[0]) {
		problems = append(problems, fmt.Sprintf("DEBUG CLOCK SET %d: got %v", at, rs[0]))
	}
	rs = rs[1:]
	var before, after []reply
	if hasKey {
		before, rs = rs[:2], rs[2:]
	}
	peekGot := rs[0]
	rs = rs[1:]
	if hasKey {
		after, rs = rs[:2], rs[2:]
	}
	throttleGot := rs[0]

	if pw := peekWant(w); !pw.matches(peekGot) {
		problems = append(problems, fmt.Sprintf("%s: got %v, want %v (the %s that follows should answer %v)",
			quoteArgs(peek), peekGot, pw, args[0], w))
	}
	if !w.matches(throttleGot) {
		problems = append(problems, fmt.Sprintf("%s (after %s): got %v, want %v", quoteArgs(args), peek[0], throttleGot, w))
	}
	if hasKey && (before[0].String() != after[0].String() || before[1].String() != after[1].String()) {
		problems = append(problems, fmt.Sprintf("%s changed the key %q: EXISTS/PTTL %v/%v before, %v/%v after",
			peek[0], args[1], before[0], before[1], after[0], after[1]))
	}
	return problems
}

// peekWant is the PEEK's expected reply given the limiter step's: the same,
// with the PEEK named in the arity and usage errors.
func peekWant(w want) want {
	if w.isErr() {
		w.str = strings.NewReplacer("Usage: cl.throttle ", "Usage: cl.peek ",
			"'tb.take'", "'tb.peek'", "'sl.hit'", "'sl.peek'").Replace(w.str)
	}
	return w
}

// readN flushes and reads n replies; transport errors fail the test.
func readN(t testing.TB, c *respConn, n int) []reply {
	t.Helper()
	if err := c.flush(); err != nil {
		t.Fatalf("sending a pipeline: %v", err)
	}
	out := make([]reply, n)
	for i := range out {
		r, err := c.read()
		if err != nil {
			t.Fatalf("reading reply %d of %d: %v", i+1, n, err)
		}
		out[i] = r
	}
	return out
}
