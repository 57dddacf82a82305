package fsm_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/internal/vectors"
	"github.com/redcell/redcell/request"
)

// engine runs command lines against a state machine the way a node does,
// without Raft or sockets: the command table and parsers of package
// commands, each write as its own log entry stamped with the step's instant
// (the replicated clock), each read through Read at that instant.
type engine struct {
	f     *fsm.FSM
	index uint64
	enc   fsm.Encoder
}

func newEngine(stripes int) *engine {
	return &engine{f: fsm.New(fsm.Config{Stripes: stripes, OnFatal: func(err error) { panic(err) }})}
}

// parsed is the request a valid command line parses to.
func parsed(t testing.TB, line string) request.Request {
	t.Helper()
	args := argsOf(strings.Fields(line))
	var scratch []byte
	spec := commands.Lookup(args[0], &scratch)
	var r request.Request
	var text string
	if spec.Class == commands.Write {
		text = commands.ParseWrite(spec, args, &r)
	} else {
		text = commands.ParseRead(spec, args, &r)
	}
	if text != "" {
		t.Fatalf("%s: %s", line, text)
	}
	return r
}

func argsOf(words []string) [][]byte {
	args := make([][]byte, len(words))
	for i, w := range words {
		args[i] = []byte(w)
	}
	return args
}

// do runs one command at now and returns its reply as the vectors write it.
func (e *engine) do(t testing.TB, now int64, words []string) vectors.Expected {
	t.Helper()
	_, res, text := e.exec(t, now, words)
	if text != "" {
		return vectors.Expected{Err: &text}
	}
	return resultAsExpected(res)
}

// exec runs one command at now: the request it parsed to and its result, or
// the error text the command layer answered instead. Every result is
// checked against its code's descriptor (checkDescribed).
func (e *engine) exec(t testing.TB, now int64, words []string) (request.Request, request.Result, string) {
	t.Helper()
	args := argsOf(words)
	var scratch []byte
	spec := commands.Lookup(args[0], &scratch)
	if spec == nil {
		t.Fatalf("%q: not a command", words)
	}
	spec = spec.ForArgs(args)
	var r request.Request
	var res request.Result
	if !spec.OwnArity && !spec.CheckArity(len(args)) {
		return r, res, commands.WrongArgs(spec.Name)
	}
	switch spec.Class {
	case commands.Write:
		if text := commands.ParseWrite(spec, args, &r); text != "" {
			return r, res, text
		}
		e.enc.Reset(now)
		e.enc.Add(&r)
		e.index++
		out := e.f.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Index: e.index, Term: 1, Data: slices.Clone(e.enc.Finish())}})
		rs, ok := out[0].(*fsm.Results)
		if !ok {
			t.Fatalf("%q: apply returned %v", words, out[0])
		}
		res = rs.R[0]
		e.f.Release(rs)
	case commands.Read:
		if text := commands.ParseRead(spec, args, &r); text != "" {
			return r, res, text
		}
		e.f.Read(&r, now, &res)
	default:
		t.Fatalf("%q: a connection command", words)
	}
	if r.Code != spec.Code {
		t.Errorf("%q: %s parsed to code %d, its table entry says %d", words, spec.Name, r.Code, spec.Code)
	}
	checkDescribed(t, &r, &res)
	return r, res, ""
}

// entry applies reqs as one log entry stamped now (a MULTI/EXEC) and
// returns copies of their results.
func (e *engine) entry(t testing.TB, now int64, reqs []request.Request) []request.Result {
	t.Helper()
	e.enc.Reset(now)
	for i := range reqs {
		e.enc.Add(&reqs[i])
	}
	e.index++
	out := e.f.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Index: e.index, Term: 1, Data: slices.Clone(e.enc.Finish())}})
	rs, ok := out[0].(*fsm.Results)
	if !ok {
		t.Fatalf("apply returned %v", out[0])
	}
	res := slices.Clone(rs.R)
	e.f.Release(rs)
	for i := range reqs {
		checkDescribed(t, &reqs[i], &res[i])
	}
	return res
}

func resultAsExpected(res request.Result) vectors.Expected {
	switch res.Kind {
	case request.KindThrottle:
		return vectors.Expected{Ints: slices.Clone(res.Ints[:])}
	case request.KindInt:
		n := res.Ints[0]
		return vectors.Expected{Int: &n}
	case request.KindType:
		s := request.TypeName(res.Ints[0])
		return vectors.Expected{Str: &s}
	case request.KindOK:
		s := "OK"
		return vectors.Expected{Str: &s}
	case request.KindBulk:
		s := strconv.Quote(string(res.Data))
		return vectors.Expected{Str: &s}
	case request.KindNil:
		s := "(nil)"
		return vectors.Expected{Str: &s}
	case request.KindBulks:
		var parts []string
		request.Items(res.Data, func(item []byte) {
			if b, ok := request.BulkItem(item); ok {
				parts = append(parts, strconv.Quote(string(b)))
			} else {
				parts = append(parts, "(nil)")
			}
		})
		s := "[" + strings.Join(parts, " ") + "]"
		return vectors.Expected{Str: &s}
	}
	s := commands.ResultErrText(res.Err)
	return vectors.Expected{Err: &s}
}

func expectedString(e vectors.Expected) string {
	switch {
	case e.Ints != nil:
		return fmt.Sprint(e.Ints)
	case e.Int != nil:
		return fmt.Sprint(*e.Int)
	case e.Str != nil:
		return "+" + *e.Str
	case e.Err != nil:
		return "-" + *e.Err
	}
	return "nothing"
}

// TestVectorsTBSL replays every scenario of tb_sl.jsonl on a fresh state
// machine with injected time, with 1 and 64 stripes. Before each TB.TAKE
// and SL.HIT step the matching PEEK must answer what the step then answers
// (SL.PEEK only for DENIED FREE hits, rule 32) and change nothing: the
// snapshot bytes are the same before and after it.
func TestVectorsTBSL(t *testing.T) {
	scenarios, err := vectors.Load("tb_sl.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, stripes := range []int{1, 64} {
		for _, sc := range scenarios {
			t.Run(fmt.Sprintf("%s/stripes=%d", sc.Name, stripes), func(t *testing.T) {
				e := newEngine(stripes)
				for i, st := range sc.Steps {
					want, _ := st.Expected()
					wantText := expectedString(want)
					if peek := peekOf(st.Args); peek != nil {
						before := snapshotOf(t, e.f)
						got := expectedString(e.do(t, st.TimeNs, peek))
						if got != strings.Replace(wantText, "'"+strings.ToLower(st.Args[0])+"'", "'"+strings.ToLower(peek[0])+"'", 1) {
							t.Errorf("step %d %q: got %s, want %s (what the step answers)", i, peek, got, wantText)
						}
						if after := snapshotOf(t, e.f); after != before {
							t.Errorf("step %d %q changed the state", i, peek)
						}
					}
					if got := expectedString(e.do(t, st.TimeNs, st.Args)); got != wantText {
						t.Errorf("step %d (t_ns %d) %q: got %s, want %s", i, st.TimeNs, st.Args, got, wantText)
					}
				}
			})
		}
	}
}

// peekOf is the PEEK that must answer what a TB.TAKE or SL.HIT step does,
// or nil when there is none (other commands, SL.HIT with DENIED COUNT).
func peekOf(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	switch strings.ToUpper(args[0]) {
	case "TB.TAKE":
		return append([]string{"TB.PEEK"}, args[1:]...)
	case "SL.HIT":
		if len(args) < 4 {
			return append([]string{"SL.PEEK"}, args[1:]...) // arity error either way
		}
		for i := 4; i < len(args); i++ {
			if strings.EqualFold(args[i], "DENIED") {
				return nil // SL.PEEK takes no DENIED: a syntax error there
			}
		}
		return append([]string{"SL.PEEK"}, args[1:]...)
	}
	return nil
}

func snapshotOf(t testing.TB, f *fsm.FSM) string {
	t.Helper()
	var b strings.Builder
	if err := f.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
