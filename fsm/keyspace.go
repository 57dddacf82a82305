package fsm

import (
	"github.com/redcell/redcell/internal/expiry"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The keyspace's own codes: they work on any key, whatever its family, and
// know a family only through its registration (kindFamily: its PTTL rule).
// SCAN and KEYS are in scan.go.
var keyspaceOps = []op{
	{code: request.Del, run: (*FSM).del},
	{code: request.FlushAll, run: (*FSM).flushAll},
	{code: request.Exists, run: (*FSM).exists},
	{code: request.PTTL, run: (*FSM).pttl},
	{code: request.TTL, run: (*FSM).ttl},
	{code: request.Type, run: (*FSM).keyType},
	{code: request.DBSize, run: (*FSM).dbSize},
	{code: request.Scan, valid: scanValid, run: (*FSM).scan},
	{code: request.Keys, run: (*FSM).keys},
}

func (f *FSM) del(r *request.Request, now int64, res *request.Result) {
	var n int64
	for _, k := range r.Keys {
		if f.store.Delete(k, now) {
			n++
		}
	}
	res.SetInt(n)
}

// flushAll removes every key. Each live key leaves a tombstone, as DEL
// does, so that WATCH sees the keys that existed change and no other (Redis
// 7.0's touchAllWatchedKeysInDb); the sweeper reclaims the memory
// shard.Linger later.
func (f *FSM) flushAll(_ *request.Request, now int64, res *request.Result) {
	f.store.BuryAll(now)
	res.Kind = request.KindOK
}

func (f *FSM) exists(r *request.Request, now int64, res *request.Result) {
	var n int64
	for _, k := range r.Keys {
		if _, live := f.store.Get(k, now); live {
			n++
		}
	}
	res.SetInt(n)
}

// pttlMs is PTTL of r.Key in ms (-1: no expiry); live is false when it is
// missing.
func (f *FSM) pttlMs(r *request.Request, now int64) (ms int64, live bool) {
	st, live := f.store.Get(r.Key, now)
	if !live {
		return 0, false
	}
	if fam := kindFamily(st.Kind); fam != nil && fam.pttl != nil {
		return fam.pttl(st, now), true
	}
	if rule := keyExpiry(st.Kind); !rule.fixed {
		// A lifetime in whole ms, as Redis keeps it (expire.go).
		ms, has := rule.expiryMs(st)
		if !has {
			return -1, true
		}
		return max(ms-floorDiv(now, 1e6), 0), true
	}
	return expiry.MsUp(st.Expire - now), true
}

func (f *FSM) pttl(r *request.Request, now int64, res *request.Result) {
	ms, live := f.pttlMs(r, now)
	if !live {
		ms = -2
	}
	res.SetInt(ms)
}

func (f *FSM) ttl(r *request.Request, now int64, res *request.Result) {
	ms, live := f.pttlMs(r, now)
	if !live {
		res.SetInt(-2)
		return
	}
	if ms == -1 { // no expiry
		res.SetInt(-1)
		return
	}
	res.SetInt((ms + 500) / 1000) // Redis rounds TTL to the nearest second
}

// keyType answers TYPE: the key's kind, which request.TypeName names.
func (f *FSM) keyType(r *request.Request, now int64, res *request.Result) {
	res.Kind = request.KindType
	res.Ints[0] = int64(request.KeyNone)
	if st, live := f.store.Get(r.Key, now); live && kindFamily(st.Kind) != nil {
		res.Ints[0] = int64(st.Kind)
	}
}

func (f *FSM) dbSize(_ *request.Request, now int64, res *request.Result) {
	res.SetInt(int64(f.store.Len(now)))
}

// keyKind is the keyspace's kind of keys of kind k (the same number).
func keyKind(k request.KeyKind) shard.Kind { return shard.Kind(k) }
