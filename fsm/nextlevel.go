//go:build redcell_nextlevel

package fsm

import "github.com/redcell/redcell/request"

// The test build's code one feature level above the base
// (request/nextlevel.go): DEBUG NEXTLEVEL key value is SET key value,
// logged as request.DebugNextLevel, which a build without the tag does not
// know.

var nextLevelOps = []op{
	{code: request.DebugNextLevel, valid: nextLevelValid, run: (*FSM).debugNextLevel},
}

func init() { register(nextLevelOps, nil) }

func nextLevelValid(r *request.Request) string {
	if r.NArgs != 0 {
		return "arguments to DEBUG NEXTLEVEL"
	}
	return oneValue(r)
}

func (f *FSM) debugNextLevel(r *request.Request, now int64, res *request.Result) {
	set := request.Request{Code: request.Set, Key: r.Key, Keys: r.Keys}
	set.SetArgs(0, 0, int64(request.ErrSetExpireTime))
	f.set(&set, now, res)
}
