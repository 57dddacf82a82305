package fsm_test

import (
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/internal/vectors"
	"github.com/redcell/redcell/request"
)

// FuzzParsedRequestsAreHonoured runs arbitrary command lines (words
// separated by NUL bytes) through the command table, every Read and Write
// command's parser and the state machine, twice (the second call sees the
// first's state), and again at a much later instant: nothing panics, and
// whatever the parser accepts the state machine honours — it never answers
// the "refused as invalid" error, which is reserved for requests no parser
// produces. Seeds: every step of the contract's vectors.
func FuzzParsedRequestsAreHonoured(f *testing.F) {
	for _, file := range []string{"tb_sl.jsonl", "cl_throttle.jsonl"} {
		scenarios, err := vectors.Load(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, sc := range scenarios {
			for _, st := range sc.Steps {
				f.Add(strings.Join(st.Args, "\x00"), st.TimeNs)
			}
		}
	}
	f.Add("SCAN\x000\x00MATCH\x00*\x00COUNT\x001\x00TYPE\x00slidinglog", int64(1))
	f.Add("KEYS\x00[a-", int64(0))
	f.Add("INCREX\x00k\x00BYFLOAT\x001\x00LBOUND\x00-inf\x00EX\x000", int64(1))
	f.Add("INCREX\x00k\x00BYINT\x005\x00UBOUND\x003\x00SATURATE\x00PXAT\x001\x00ENX", int64(1))
	f.Add("SADD\x00k\x00a\x00b\x00a", int64(1))
	f.Fuzz(func(t *testing.T, line string, now int64) {
		words := strings.Split(line, "\x00")
		var scratch []byte
		spec := commands.Lookup([]byte(words[0]), &scratch)
		if spec == nil || spec.Class == commands.Connection || len(words) > 64 {
			return
		}
		now = max(now, 0)
		e := newEngine(2)
		invalid := "-" + commands.ResultErrText(request.ErrInvalidOp)
		for _, at := range []int64{now, now, now + now/2 + 1e12} {
			if got := expectedString(e.do(t, at, words)); got == invalid {
				t.Fatalf("%q at %d: the parser accepted what the state machine refuses", words, at)
			}
		}
	})
}
