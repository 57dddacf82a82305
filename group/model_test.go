package group

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// Tagged ops. To find out, after a run, which Propose call an op in the log
// came from, every CL.THROTTLE op carries its own ID inside its emission
// interval: Interval = k·tagSpace + id with id < tagSpace. The tag changes
// the interval by less than 10 ms in 10–100 ms, so the ops still share key
// state and still limit, refill and refund each other as real traffic does;
// the model below uses exactly the logged parameters, so the tag cannot hide
// a difference.
const tagSpace = 10_000_000 // ns

// opTag is the ID carried by a tagged op.
func opTag(op *request.Request) int { return int(gcraOf(op).Interval % tagSpace) }

// taggedOp is a CL.THROTTLE on key with random but valid parameters and the
// given tag. Limits are small and quantities include 0 and refunds, so under
// a frozen clock keys reach their limit, get refunds and sometimes answer
// redis-cell's expire error: results depend on the order of ops on a key.
func taggedOp(rng *rand.Rand, key []byte, id int) request.Request {
	if id >= tagSpace {
		panic(fmt.Sprintf("op tag %d does not fit", id)) // a test bug
	}
	q := int64(1)
	switch rng.IntN(8) {
	case 0:
		q = 0
	case 1, 2:
		q = -rng.Int64N(4)
	case 3:
		q = 1 + rng.Int64N(3)
	}
	return throttleReq(key, gcra.Params{
		Interval: (1+rng.Int64N(10))*tagSpace + int64(id),
		Limit:    1 + rng.Int64N(20),
		Quantity: q,
	})
}

// gcraModel is the sequential specification of a keyspace of CL keys under
// a clock that does not move: gcra.Throttle over a map. With a constant now,
// a key exists exactly while its TAT is after now (redis-cell's millisecond
// expiry only matters once time passes).
type gcraModel struct {
	tat map[string]int64
}

func newGCRAModel() *gcraModel { return &gcraModel{tat: map[string]int64{}} }

// throttle applies op at now and returns the result the state machine must
// give.
func (m *gcraModel) throttle(op *request.Request, now int64) request.Result {
	tat, ok := m.tat[string(op.Key)]
	present := ok && tat > now
	rep, newTAT, outcome := gcra.Throttle(tat, present, now, gcraOf(op))
	var r request.Result
	switch outcome {
	case gcra.StoreExpireError:
		r.Kind, r.Err = request.KindError, request.ErrExpire
	default:
		r.Kind = request.KindThrottle
		r.Ints = [5]int64{rep.Limited, rep.Limit, rep.Remaining, rep.RetryAfter, rep.ResetAfter}
	}
	if outcome != gcra.Keep {
		if newTAT > now {
			m.tat[string(op.Key)] = newTAT
		} else {
			delete(m.tat, string(op.Key))
		}
	}
	return r
}

// origin says where a tagged op came from: which batch (numbered by the
// test) and its position in that batch.
type origin struct {
	batch, pos int
}

// checkEntriesKeepBatches verifies that every tagged op appears in the log
// exactly once, and that each batch's ops are contiguous, in order, and in
// one entry: the proposer never splits or reorders a batch. It returns, per
// entry, the batches it holds in order.
func checkEntriesKeepBatches(t *testing.T, entries []loggedEntry, origins []origin, batchLen []int) [][]int {
	t.Helper()
	seen := make([]bool, len(origins))
	perEntry := make([][]int, len(entries))
	for ei, e := range entries {
		for i := 0; i < len(e.ops); {
			id := opTag(&e.ops[i])
			if id >= len(origins) || seen[id] {
				t.Fatalf("entry %d op %d: tag %d unknown or logged twice", e.log.Index, i, id)
			}
			o := origins[id]
			if o.pos != 0 {
				t.Fatalf("entry %d op %d: batch %d starts at its op %d, not 0", e.log.Index, i, o.batch, o.pos)
			}
			n := batchLen[o.batch]
			if i+n > len(e.ops) {
				t.Fatalf("entry %d: batch %d (%d ops) split across entries at op %d", e.log.Index, o.batch, n, i)
			}
			for j := 0; j < n; j++ {
				id := opTag(&e.ops[i+j])
				if id >= len(origins) || seen[id] || origins[id] != (origin{o.batch, j}) {
					t.Fatalf("entry %d op %d: want op %d of batch %d, got tag %d", e.log.Index, i+j, j, o.batch, id)
				}
				seen[id] = true
			}
			perEntry[ei] = append(perEntry[ei], o.batch)
			i += n
		}
	}
	for id, ok := range seen {
		if !ok {
			t.Fatalf("op %d (batch %d) was answered but is not in the log", id, origins[id].batch)
		}
	}
	return perEntry
}
