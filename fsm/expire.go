package fsm

import (
	"math"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The keyspace's expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT
// (NX | XX | GT | LT), PERSIST, EXPIRETIME, PEXPIRETIME and TOUCH. They
// work on any family's keys through the family's expiry rule (family.expiry):
//
//   - a lifetime (the default, and CL's): the key's expiry is only when it
//     goes, so an explicit one replaces it and PERSIST removes it (Expire
//     MaxInt64: no expiry);
//   - a fixed expiry (TB, SL): the expiry is part of the limiter's state (a
//     greedy bucket's full_at, a log's newest entry + window), so moving it
//     would change the limiter's decisions. Only deletion is honoured: a
//     time at or before now deletes the key, as for any key; a later one
//     and PERSIST answer 0 and change nothing.
//
// Every decision (the option checks, the overflow check of the relative
// forms, deletion) is made at apply time against the entry's now, so every
// replica makes the same one. Times are Redis's: whole Unix milliseconds,
// a key with expiry ms M lives while the millisecond clock is at most M.

var expireOps = []op{
	{code: request.Expire, valid: expireValid, run: (*FSM).expire},
	{code: request.PExpire, valid: expireValid, run: (*FSM).expire},
	{code: request.ExpireAt, valid: expireValid, run: (*FSM).expire},
	{code: request.PExpireAt, valid: expireValid, run: (*FSM).expire},
	{code: request.Persist, run: (*FSM).persist},
	{code: request.ExpireTime, run: (*FSM).expireTime},
	{code: request.PExpireTime, run: (*FSM).expireTime},
	{code: request.Touch, run: (*FSM).exists},
	{code: request.Rename, valid: renameValid, run: (*FSM).rename},
	{code: request.RenameNX, valid: renameValid, run: (*FSM).rename},
}

// expiryRule is how the expiry commands read and move one family's keys'
// expiry. The zero value is the lifetime rule on Expire alone.
type expiryRule struct {
	// fixed: the expiry is the limiter's state and cannot move.
	fixed bool
	// ms is the key's expiry in Unix ms, ok false without one; nil:
	// lifetimeMs.
	ms func(st shard.State) (ms int64, ok bool)
	// set returns st with expiry ms, or without expiry when ok is false;
	// nil: setLifetime.
	set func(st shard.State, ms int64, ok bool) shard.State
}

func (e *expiryRule) expiryMs(st shard.State) (int64, bool) {
	switch {
	case e.ms != nil:
		return e.ms(st)
	case e.fixed:
		// Always has one (saturated at MaxInt64 by TB's overflow rule or
		// not), rounded up to the ms as its PTTL is (expiry.MsUp).
		return -floorDiv(-st.Expire, 1e6), true
	}
	return lifetimeMs(st)
}

func (e *expiryRule) with(st shard.State, ms int64, ok bool) shard.State {
	if e.set != nil {
		return e.set(st, ms, ok)
	}
	return setLifetime(st, ms, ok)
}

// noExpiry is the Expire of a key without expiry: the shard's liveness rule
// (now < Expire) keeps it for ever.
const noExpiry = math.MaxInt64

// lifetimeMs is the expiry of a key whose Expire is its first nanosecond
// gone: the last millisecond it lives.
func lifetimeMs(st shard.State) (int64, bool) {
	if st.Expire == noExpiry {
		return 0, false
	}
	return floorDiv(st.Expire-1, 1e6), true
}

// setLifetime gives st the expiry ms (the key's last millisecond), or none.
// An expiry past 2262 saturates one nanosecond short of noExpiry: a family
// that must answer such an expiry exactly keeps its millisecond elsewhere,
// as CL does (clSetExpiry).
func setLifetime(st shard.State, ms int64, ok bool) shard.State {
	switch {
	case !ok:
		st.Expire = noExpiry
	case ms+1 > math.MaxInt64/1_000_000:
		st.Expire = noExpiry - 1
	default:
		st.Expire = (ms + 1) * 1e6
	}
	return st
}

// keyExpiry is the expiry rule of keys of kind k.
func keyExpiry(k shard.Kind) *expiryRule {
	if fam := kindFamily(k); fam != nil {
		return &fam.expiry
	}
	return &expiryRule{}
}

func expireValid(r *request.Request) string {
	if r.NArgs != 2 {
		return "expiry request without its time and flags"
	}
	fl := r.Args[1]
	switch {
	case fl&^(request.ExpireNX|request.ExpireXX|request.ExpireGT|request.ExpireLT) != 0:
		return "unknown expiry flags"
	case fl&request.ExpireNX != 0 && fl != request.ExpireNX:
		return "NX with XX, GT or LT"
	case fl&request.ExpireGT != 0 && fl&request.ExpireLT != 0:
		return "GT with LT"
	}
	return ""
}

// expire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT: Redis 7.0's
// expireGenericCommand at the entry's now.
func (f *FSM) expire(r *request.Request, now int64, res *request.Result) {
	nowMs := floorDiv(now, 1e6)
	when, flags := r.Args[0], r.Args[1]
	if r.Code == request.Expire || r.Code == request.PExpire {
		if when > math.MaxInt64-nowMs {
			if r.Code == request.Expire {
				res.SetErr(request.ErrExpireTime)
			} else {
				res.SetErr(request.ErrPExpireTime)
			}
			return
		}
		when += nowMs
	}
	res.SetInt(0)
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			return cur, shard.Keep
		}
		rule := keyExpiry(cur.Kind)
		curMs, has := rule.expiryMs(cur)
		switch {
		case flags&request.ExpireNX != 0 && has,
			flags&request.ExpireXX != 0 && !has,
			flags&request.ExpireGT != 0 && (!has || when <= curMs), // no expiry is infinite
			flags&request.ExpireLT != 0 && has && when >= curMs:
			return cur, shard.Keep
		}
		if when <= nowMs {
			res.SetInt(1)
			return cur, shard.Delete
		}
		if rule.fixed {
			return cur, shard.Keep
		}
		res.SetInt(1)
		return rule.with(cur, when, true), shard.Put
	})
}

// persist is PERSIST: 1 when the key had an expiry it could lose.
func (f *FSM) persist(r *request.Request, now int64, res *request.Result) {
	res.SetInt(0)
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			return cur, shard.Keep
		}
		rule := keyExpiry(cur.Kind)
		if _, has := rule.expiryMs(cur); !has || rule.fixed {
			return cur, shard.Keep
		}
		res.SetInt(1)
		return rule.with(cur, 0, false), shard.Put
	})
}

// expireTime is EXPIRETIME and PEXPIRETIME. EXPIRETIME rounds the
// millisecond to the nearest second, as Redis 7.0 does.
func (f *FSM) expireTime(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.Get(r.Key, now)
	if !live {
		res.SetInt(-2)
		return
	}
	ms, has := keyExpiry(st.Kind).expiryMs(st)
	switch {
	case !has:
		res.SetInt(-1)
	case r.Code == request.PExpireTime:
		res.SetInt(ms)
	default:
		s := ms / 1000
		if ms%1000 >= 500 {
			s++
		}
		res.SetInt(s)
	}
}
