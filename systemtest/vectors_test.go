package systemtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The CL.THROTTLE vectors (../../shared/vectors/cl_throttle.jsonl) replayed
// over RESP against the real binary, each step at its own injected instant.
// tb_sl.jsonl is not replayed: TB.* and SL.* are not implemented yet.

type vectorScenario struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Steps       []vectorStep `json:"steps"`
}

type vectorStep struct {
	TNs             int64           `json:"t_ns"`
	Args            []string        `json:"args"`
	Reply           json.RawMessage `json:"reply"`
	TimingSensitive bool            `json:"timing_sensitive"`
}

// expected decodes the step's reply: an integer array or {"error": text}.
func (s vectorStep) expected() (want, error) {
	var ints []int64
	if err := json.Unmarshal(s.Reply, &ints); err == nil {
		return wantInts(ints...), nil
	}
	var e struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(s.Reply, &e); err != nil || e.Error == nil {
		return want{}, fmt.Errorf("reply %s is neither an integer array nor {\"error\": ...}", s.Reply)
	}
	return wantErr(*e.Error), nil
}

// vectorsDir is REDCELL_VECTORS_DIR, or the shared contract's vectors seen
// from this package's directory.
func vectorsDir() string {
	if d := os.Getenv("REDCELL_VECTORS_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "vectors")
}

// loadVectors reads a JSONL vector file; a missing or malformed file fails
// the test (the vectors are part of the contract, not optional).
func loadVectors(t testing.TB, name string) []vectorScenario {
	t.Helper()
	path := filepath.Join(vectorsDir(), name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("vectors: %v (set REDCELL_VECTORS_DIR)", err)
	}
	defer f.Close()
	var out []vectorScenario
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s vectorScenario
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if len(s.Steps) == 0 {
			t.Fatalf("%s:%d: scenario %q has no steps", path, line, s.Name)
		}
		for i, st := range s.Steps {
			if _, err := st.expected(); err != nil {
				t.Fatalf("%s:%d: scenario %q step %d: %v", path, line, s.Name, i, err)
			}
			if i > 0 && st.TNs < s.Steps[i-1].TNs {
				// The replicated clock cannot go back; such a step would
				// need a copy of an earlier state.
				t.Fatalf("%s:%d: scenario %q step %d goes back in time", path, line, s.Name, i)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no scenarios", path)
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
			first := sc.Steps[0].TNs
			shift := ceilSecond(max(0, replicatedClock(t, c)+second-first))
			replayScenario(t, c, sc, shift, withPeek)
		})
	}
}

// replayAtOwnTime replays a scenario unshifted on a node of its own.
func replayAtOwnTime(t *testing.T, sc vectorScenario, withPeek bool) {
	n := startTestNode(t, "vectors-own-clock")
	c := mustDial(t, n.addr())
	if clk := replicatedClock(t, c); clk > sc.Steps[0].TNs {
		t.Fatalf("fresh node's replicated clock %d is past the scenario's first instant %d", clk, sc.Steps[0].TNs)
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
	setClock(t, c, sc.Steps[0].TNs+shift)
	expectReply(t, c, wantStatus("OK"), "FLUSHALL")
	failures := 0
	for i, st := range sc.Steps {
		w, _ := st.expected()
		at := st.TNs + shift
		var problems []string
		if withPeek && isThrottle(st.Args) {
			problems = stepWithPeek(t, c, st.Args, at, w)
		} else {
			problems = stepPlain(t, c, st.Args, at, w)
		}
		for _, p := range problems {
			failures++
			if failures <= maxStepFailures {
				t.Errorf("step %d (t_ns %d, shift %+d): %s", i, st.TNs, shift, p)
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
