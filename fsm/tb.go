package fsm

import (
	"fmt"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
	"github.com/redcell/redcell/tokenbucket"
)

// The token-bucket family (TB.TAKE, TB.PEEK) in the state machine. A key is
// a fixed-size shard.State, as a CL key is (no value part): Kind
// KindTokenGreedy or KindTokenInterval (two families for WRONGTYPE), Expire
// the key's lifetime (greedy: full_at, the whole state), A the INTERVAL
// tokens, B the INTERVAL anchor. tokenbucket.State maps onto it one to one.
var tbFamily = family{
	desc: request.TokenBucket,
	ops: []op{
		{code: request.TBTake, valid: tbValid, run: (*FSM).tbTake},
		{code: request.TBPeek, valid: tbValid, run: (*FSM).tbPeek},
	},
	// Expire is the bucket's state (greedy: full_at), so EXPIRE only
	// deletes (expire.go).
	expiry: expiryRule{fixed: true},
}

// The keyspace kinds of TB keys, one per mode.
var (
	tbGreedyKind   = keyKind(request.KeyTokenGreedy)
	tbIntervalKind = keyKind(request.KeyTokenInterval)
)

// tbArgs is how many arguments TBTake and TBPeek carry: capacity,
// refill_tokens, refill_period_ms, COST, INTERVAL (0 or 1).
const tbArgs = 5

// tbParams rebuilds the parameters a TB request carries, with the checks
// the parser made (tokenbucket.NewParams), so every replica derives the
// same T and spans by integer arithmetic.
func tbParams(r *request.Request) (tokenbucket.Params, error) {
	return tokenbucket.NewParams(r.Args[0], r.Args[1], r.Args[2], r.Args[3], r.Args[4] == 1)
}

func tbValid(r *request.Request) string {
	if r.NArgs != tbArgs {
		return fmt.Sprintf("%d arguments, not the %d token-bucket parameters", r.NArgs, tbArgs)
	}
	if r.Args[4] != 0 && r.Args[4] != 1 {
		return fmt.Sprintf("INTERVAL flag %d", r.Args[4])
	}
	if _, err := tbParams(r); err != nil {
		return "token-bucket parameters the parser refuses: " + err.Error()
	}
	return ""
}

// tbKind is the key kind (family) a TB call with p works on.
func tbKind(p tokenbucket.Params) shard.Kind {
	if p.Interval {
		return tbIntervalKind
	}
	return tbGreedyKind
}

// tbState is the bucket a stored key holds; the zero State (a missing key)
// is the zero bucket, which tokenbucket reads as full.
func tbState(st shard.State) tokenbucket.State {
	return tokenbucket.State{Expire: st.Expire, Tokens: st.A, Anchor: st.B}
}

// tbCheck runs the validation steps that need the entry's now, in the
// contract's order: the clock-dependent overflow check (rule 5.5), then
// WRONGTYPE (5.6). It reports whether the call may go on.
func tbCheck(p tokenbucket.Params, cur shard.State, live bool, now int64, res *request.Result) bool {
	if p.CheckAt(now) != nil {
		res.SetErr(request.ErrNotInteger)
		return false
	}
	if live && cur.Kind != tbKind(p) {
		res.SetErr(request.ErrWrongType)
		return false
	}
	return true
}

func (f *FSM) tbTake(r *request.Request, now int64, res *request.Result) {
	p, _ := tbParams(r) // validRequest accepted it
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !tbCheck(p, cur, live, now, res) {
			return cur, shard.Keep
		}
		rep, next, o := tokenbucket.Take(tbState(cur), now, p)
		switch o {
		case tokenbucket.Store:
			setReply(res, rep.Ints())
			return shard.State{Kind: tbKind(p), Expire: next.Expire, A: next.Tokens, B: next.Anchor}, shard.Put
		case tokenbucket.Delete:
			setReply(res, rep.Ints())
			return cur, shard.Delete
		case tokenbucket.Keep:
			setReply(res, rep.Ints())
		case tokenbucket.Reject:
			res.SetErr(request.ErrNotInteger)
		default:
			res.SetErr(request.ErrCorruptBucket)
		}
		return cur, shard.Keep
	})
}

func (f *FSM) tbPeek(r *request.Request, now int64, res *request.Result) {
	p, _ := tbParams(r)
	cur, live := f.store.Get(r.Key, now)
	if !tbCheck(p, cur, live, now, res) {
		return
	}
	rep, err := tokenbucket.Peek(tbState(cur), now, p)
	switch err {
	case nil:
		setReply(res, rep.Ints())
	case tokenbucket.ErrCorrupt:
		res.SetErr(request.ErrCorruptBucket)
	default:
		res.SetErr(request.ErrNotInteger)
	}
}
