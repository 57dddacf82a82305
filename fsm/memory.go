package fsm

import "github.com/redcell/redcell/request"

// memoryOps answer MEMORY USAGE (server/memory.go). The server hands the
// code only to ReadLocal: it is answered from this node's state and never
// applied from the log.
var memoryOps = []op{
	{code: request.MemoryUsage, run: (*FSM).memoryUsage},
}

// memoryUsage answers the bytes r.Key takes in the keyspace
// (shard.Store.Usage), or nil when it is missing at now, as Redis answers
// MEMORY USAGE of a missing key.
func (f *FSM) memoryUsage(r *request.Request, now int64, res *request.Result) {
	n, live := f.store.Usage(r.Key, now)
	if !live {
		res.Kind = request.KindNil
		return
	}
	res.SetInt(int64(n))
}
