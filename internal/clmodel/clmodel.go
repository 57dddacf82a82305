// Package clmodel is a reference model of CL.THROTTLE for tests: the
// contract's algorithm written with math/big integers, every sum and
// difference exact and only the three products (and the stored TAT, mod
// 2^64) wrapped by hand, plus redis-cell's keyspace (a key per TAT with a
// whole-millisecond expiry). It is deliberately naive and independent of
// package gcra's 128-bit arithmetic and of package fsm's storage encoding,
// so tests of those can compare against it. Slow and allocating: tests only.
package clmodel

import (
	"math"
	"math/big"
)

// Decision is one CL.THROTTLE's answer and effect in the model.
type Decision struct {
	Reply [5]int64 // limited, limit, remaining, retry_after, reset_after
	// Write: the call was allowed (redis-cell writes the key).
	Write bool
	// ExpireError: the allowed call's TTL truncates to <= -2 ms (redis-cell
	// answers "Error while setting key expire").
	ExpireError bool
	TAT         uint64   // the stored TAT after the call (mod 2^64)
	TTL         *big.Int // exact ns from now to the new (or, limited, the read) TAT
	TTLMillis   int64    // TTL truncated to whole ms
}

// Interval is the emission interval T of count per period seconds, or 0
// (the zero-rate error): period·1e9 exactly, rounded once to float64,
// divided by float64(count), truncated toward zero and saturated.
func Interval(count, period int64) int64 {
	if count == 0 || period == 0 {
		return 0
	}
	prod := new(big.Int).Mul(big.NewInt(period), big.NewInt(1e9))
	pf, _ := new(big.Float).SetInt(prod).Float64()
	return truncSat(pf / float64(count))
}

func wrap(x *big.Int) int64 {
	m := new(big.Int).And(x, new(big.Int).SetUint64(math.MaxUint64))
	return int64(m.Uint64())
}

// Decide is the spec's algorithm for CL.THROTTLE's four integers with the
// stored TAT (when present) at now. T must be non-zero.
func Decide(maxBurst, count, period, qty int64, tat uint64, present bool, now int64) Decision {
	T := Interval(count, period)
	var d Decision
	limit := wrap(new(big.Int).Add(big.NewInt(maxBurst), big.NewInt(1)))
	tau := wrap(new(big.Int).Mul(big.NewInt(T), big.NewInt(limit)))
	inc := wrap(new(big.Int).Mul(big.NewInt(T), big.NewInt(qty)))

	bNow := big.NewInt(now)
	bTat := new(big.Int).Set(bNow)
	if present {
		bTat.SetUint64(tat)
	}
	base := bNow
	if bTat.Cmp(bNow) > 0 {
		base = bTat
	}
	newTAT := new(big.Int).Add(base, big.NewInt(inc))
	allowAt := new(big.Int).Sub(newTAT, big.NewInt(tau))
	var retry, ttl *big.Int
	if bNow.Cmp(allowAt) < 0 {
		d.Reply[0] = 1
		retry = big.NewInt(-1e9)
		if inc <= tau {
			retry = new(big.Int).Sub(allowAt, bNow)
		}
		ttl = new(big.Int).Sub(bTat, bNow)
		d.TAT = uint64(wrap(bTat))
	} else {
		retry = big.NewInt(-1e9)
		ttl = new(big.Int).Sub(newTAT, bNow)
		d.TAT = uint64(wrap(newTAT))
		d.Write = true
		ms := new(big.Int).Quo(ttl, big.NewInt(1e6)) // Quo truncates toward zero
		d.ExpireError = ms.Cmp(big.NewInt(-2)) <= 0
		d.TTLMillis = ms.Int64()
	}
	d.TTL = ttl
	d.Reply[1] = limit
	next := new(big.Int).Sub(big.NewInt(tau), ttl)
	if next.Cmp(new(big.Int).Neg(big.NewInt(T))) > 0 {
		nf, _ := new(big.Float).SetInt(new(big.Int).Quo(next, big.NewInt(1000))).Float64()
		d.Reply[2] = truncSat(nf / float64(T/1000))
	}
	d.Reply[3] = Secs(retry)
	d.Reply[4] = Secs(ttl)
	return d
}

func truncSat(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64: // 2^63 as a float64
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// Secs is the spec's secs(d): whole seconds toward zero, plus 1 when d > 0
// and its sub-second part holds a whole millisecond.
func Secs(d *big.Int) int64 {
	q, r := new(big.Int).QuoRem(d, big.NewInt(1e9), new(big.Int))
	if d.Sign() > 0 && r.Cmp(big.NewInt(1e6)) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// Keyspace is redis-cell's storage of CL keys: the TAT and the absolute
// expiry in Unix ms (Redis keeps a key while the ms clock is <= it).
type Keyspace map[string]Key

// Key is one stored CL key.
type Key struct {
	TAT      uint64
	ExpireMs int64
}

func floorMs(now int64) int64 {
	q := now / 1e6
	if now%1e6 < 0 {
		q--
	}
	return q
}

// Live reports whether key exists at now, and its state.
func (ks Keyspace) Live(key string, now int64) (Key, bool) {
	k, ok := ks[key]
	if !ok || floorMs(now) > k.ExpireMs {
		return Key{}, false
	}
	return k, true
}

// Throttle applies one CL.THROTTLE: the reply, or expireErr for the expire
// error. An allowed call whose exact TTL is not positive leaves no key (its
// TAT is not in the future: the spec's "behaves like an absent key").
func (ks Keyspace) Throttle(key string, maxBurst, count, period, qty, now int64) (reply [5]int64, expireErr bool) {
	k, live := ks.Live(key, now)
	d := Decide(maxBurst, count, period, qty, k.TAT, live, now)
	if d.Write {
		if d.TTL.Sign() > 0 {
			ks[key] = Key{TAT: d.TAT, ExpireMs: floorMs(now) + d.TTLMillis}
		} else {
			delete(ks, key)
		}
	}
	return d.Reply, d.ExpireError
}

// Peek answers CL.PEEK: Throttle's answer with no effect.
func (ks Keyspace) Peek(key string, maxBurst, count, period, qty, now int64) (reply [5]int64, expireErr bool) {
	k, live := ks.Live(key, now)
	d := Decide(maxBurst, count, period, qty, k.TAT, live, now)
	return d.Reply, d.Write && d.ExpireError
}

// PTTL is Redis's PTTL: ms left, or -2 for no key.
func (ks Keyspace) PTTL(key string, now int64) int64 {
	k, live := ks.Live(key, now)
	if !live {
		return -2
	}
	return k.ExpireMs - floorMs(now)
}
