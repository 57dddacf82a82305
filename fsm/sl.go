package fsm

import (
	"fmt"
	"slices"
	"sync"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
	"github.com/redcell/redcell/slidinglog"
)

// The sliding-log family (SL.HIT, SL.PEEK) in the state machine. A key is a
// shard.State of KindSlidingLog whose value (Val) is the log's runs in
// slidinglog's encoding, at most limit entries, and whose Expire is the
// newest entry + the window of the call that wrote it; A and B are unused.
// The value lives in the keyspace's arena right after the key, so a log
// costs its encoded bytes and nothing per entry or attempt.
var slFamily = family{
	desc: request.SlidingLog,
	ops: []op{
		{code: request.SLHit, valid: slValid, run: (*FSM).slHit},
		{code: request.SLPeek, valid: slValid, run: (*FSM).slPeek},
	},
	hasValue: true,
	check:    slCheckRecord,
	// Expire is the newest entry + window, which the log's records and
	// its snapshot check rely on: EXPIRE only deletes (expire.go).
	expiry: expiryRule{fixed: true},
}

// slKind is the keyspace kind of an SL key.
var slKind = keyKind(request.KeySlidingLog)

// slArgs is how many arguments SLHit and SLPeek carry: limit, window_ms,
// COST, MINGAP, DENIED COUNT (0 or 1).
const slArgs = 5

// slParams rebuilds the parameters an SL request carries, with the checks
// the parser made (slidinglog.NewParams).
func slParams(r *request.Request) (slidinglog.Params, error) {
	return slidinglog.NewParams(r.Args[0], r.Args[1], r.Args[2], r.Args[3], r.Args[4] == 1)
}

func slValid(r *request.Request) string {
	if r.NArgs != slArgs {
		return fmt.Sprintf("%d arguments, not the %d sliding-log parameters", r.NArgs, slArgs)
	}
	if r.Args[4] != 0 && r.Args[4] != 1 {
		return fmt.Sprintf("DENIED flag %d", r.Args[4])
	}
	if r.Code == request.SLPeek && r.Args[4] != 0 {
		return "DENIED on SL.PEEK"
	}
	if _, err := slParams(r); err != nil {
		return "sliding-log parameters the parser refuses: " + err.Error()
	}
	return ""
}

// slCheck is tbCheck for the sliding log: overflow at now, then WRONGTYPE.
func slCheck(p slidinglog.Params, cur shard.State, live bool, now int64, res *request.Result) bool {
	if p.CheckAt(now) != nil {
		res.SetErr(request.ErrNotInteger)
		return false
	}
	if live && cur.Kind != slKind {
		res.SetErr(request.ErrWrongType)
		return false
	}
	return true
}

// slCheckRecord refuses a snapshot record whose value is not a log in
// slidinglog's canonical encoding.
func slCheckRecord(rr *recordReader, st shard.State, _ byte) error {
	var err error
	if rr.runs, err = slidinglog.Decode(rr.runs[:0], st.Val); err != nil {
		return fmt.Errorf("sliding log: %w", err)
	}
	if len(rr.runs) > 1<<16 {
		rr.runs = nil // do not keep a huge log's runs
	}
	return nil
}

// maxKeptLogBuf: a log buffer larger than this is not kept for the next
// call (one huge log must not pin its memory in the state machine).
const maxKeptLogBuf = 64 << 10

func (f *FSM) slHit(r *request.Request, now int64, res *request.Result) {
	p, _ := slParams(r) // validRequest accepted it
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !slCheck(p, cur, live, now, res) {
			return cur, shard.Keep
		}
		// cur.Val aliases the keyspace; Hit writes the new log to logBuf,
		// which Update then copies into the keyspace.
		f.logBuf = slices.Grow(f.logBuf[:0], len(cur.Val)+slidinglog.MaxGrowth)
		rep, next, o := slidinglog.Hit(slidinglog.State{Expire: cur.Expire, Log: cur.Val}, now, p, f.logBuf)
		switch o {
		case slidinglog.Store:
			setReply(res, rep.Ints())
			return shard.State{Kind: slKind, Expire: next.Expire, Val: next.Log}, shard.Put
		case slidinglog.Keep:
			setReply(res, rep.Ints())
		case slidinglog.Reject:
			res.SetErr(request.ErrNotInteger)
		default:
			res.SetErr(request.ErrCorruptLog)
		}
		return cur, shard.Keep
	})
	if cap(f.logBuf) > maxKeptLogBuf {
		f.logBuf = nil
	}
}

// peekBufs lends SL.PEEK (which runs on any reading goroutine) a buffer to
// copy the log into, so a peek does not allocate.
var peekBufs = sync.Pool{New: func() any { return new([]byte) }}

func (f *FSM) slPeek(r *request.Request, now int64, res *request.Result) {
	p, _ := slParams(r)
	buf := peekBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxKeptLogBuf {
			peekBufs.Put(buf)
		}
	}()
	cur, live := f.store.GetValue(r.Key, now, *buf)
	if cur.Val != nil {
		*buf = cur.Val[:0] // keep the grown buffer
	}
	if !slCheck(p, cur, live, now, res) {
		return
	}
	rep, err := slidinglog.Peek(slidinglog.State{Expire: cur.Expire, Log: cur.Val}, now, p)
	switch err {
	case nil:
		setReply(res, rep.Ints())
	case slidinglog.ErrCorrupt:
		res.SetErr(request.ErrCorruptLog)
	default:
		res.SetErr(request.ErrNotInteger)
	}
}
