package scripting

import (
	"io"
	"log/slog"
	"strconv"

	"github.com/redcell/redcell/request"
)

// fakeKeyspace is an Executor over a map, with a few commands' results:
// enough to test the engine without the state machine.
type fakeKeyspace struct {
	strs   map[string]string
	hashes map[string][][2]string
	calls  int
}

func newFake() *fakeKeyspace {
	return &fakeKeyspace{strs: map[string]string{}, hashes: map[string][][2]string{}}
}

func (f *fakeKeyspace) Execute(req *request.Request, res *request.Result) {
	f.calls++
	switch req.Code {
	case request.Get:
		if s, ok := f.strs[string(req.Key)]; ok {
			res.Kind, res.Data = request.KindBulk, []byte(s)
		} else {
			res.Kind = request.KindNil
		}
	case request.Set:
		f.strs[string(req.Key)] = string(req.Keys[0])
		res.Kind = request.KindOK
	case request.IncrBy:
		n := int64(0)
		if s, ok := f.strs[string(req.Key)]; ok {
			var err error
			if n, err = strconv.ParseInt(s, 10, 64); err != nil {
				res.SetErr(request.ErrNotInteger)
				return
			}
		}
		n += req.Arg(0)
		f.strs[string(req.Key)] = strconv.FormatInt(n, 10)
		res.SetInt(n)
	case request.Del:
		n := int64(0)
		for _, k := range req.Keys {
			if _, ok := f.strs[string(k)]; ok {
				delete(f.strs, string(k))
				n++
			}
		}
		res.SetInt(n)
	case request.HGetAll:
		res.Kind = request.KindMap
		for _, p := range f.hashes[string(req.Key)] {
			res.Data = request.AppendItem(res.Data, []byte(p[0]))
			res.Data = request.AppendItem(res.Data, []byte(p[1]))
		}
	default:
		res.SetErr(request.ErrInvalidOp)
	}
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
