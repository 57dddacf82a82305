package systemtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/vectors"
)

// The CL.THROTTLE vectors (cl_throttle.jsonl in internal/vectors) replayed
// over RESP against the real binary, each step at its own injected instant.
// tb_sl.jsonl is not replayed: TB.* and SL.* are not implemented yet.

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

func isThrottle(args []string) bool {
	return len(args) > 0 && strings.EqualFold(args[0], "cl.throttle")
}

// TestVectorsOverRESP replays every CL.THROTTLE scenario and compares each
// reply exactly (integer kinds and error texts included).
func TestVectorsOverRESP(t *testing.T) {
	replayAllVectors(t, false)
}

// TestVectorStepsWithPeek sends, before each CL.THROTTLE step, CL.PEEK with
// the same arguments at the same instant: it must answer what CL.THROTTLE
// then answers, and change nothing (EXISTS and PTTL equal around it).
func TestVectorStepsWithPeek(t *testing.T) {
	replayAllVectors(t, true)
}

func replayAllVectors(t *testing.T, withPeek bool) {
	scenarios := loadVectors(t, "cl_throttle.jsonl")
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
		if withPeek && isThrottle(st.Args) {
			problems = stepWithPeek(t, c, st.Args, at, w)
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
// CL.PEEK, EXISTS/PTTL, then the CL.THROTTLE step.
func stepWithPeek(t *testing.T, c *respConn, args []string, at int64, w want) []string {
	peek := append([]string{"CL.PEEK"}, args[1:]...)
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
		problems = append(problems, fmt.Sprintf("%s: got %v, want %v (the CL.THROTTLE that follows should answer %v)",
			quoteArgs(peek), peekGot, pw, w))
	}
	if !w.matches(throttleGot) {
		problems = append(problems, fmt.Sprintf("%s (after CL.PEEK): got %v, want %v", quoteArgs(args), throttleGot, w))
	}
	if hasKey && (before[0].String() != after[0].String() || before[1].String() != after[1].String()) {
		problems = append(problems, fmt.Sprintf("CL.PEEK changed the key %q: EXISTS/PTTL %v/%v before, %v/%v after",
			args[1], before[0], before[1], after[0], after[1]))
	}
	return problems
}

// peekWant is CL.PEEK's expected reply given CL.THROTTLE's: the same, with
// cl.peek named in the usage error.
func peekWant(w want) want {
	if w.isErr() {
		w.str = strings.Replace(w.str, "Usage: cl.throttle ", "Usage: cl.peek ", 1)
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
