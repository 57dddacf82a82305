package gcra

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/vectors"
)

// This file replays cl_throttle.jsonl (internal/vectors; replies redis-cell
// v0.5.0 gave) through a tiny in-test keyspace with injected time. The model
// parses arguments exactly as CL.THROTTLE does, so the parse and arity
// vectors check that NewParams leaves those errors to the parser and that the
// error texts handed out are verbatim.

const (
	cellErrorPrefix = "Cell error: Store error: "
	usageText       = "Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
)

// storedKey is a CL key as redis-cell leaves it in Redis, and as Redcell's
// state machine keeps it: the TAT and the absolute expiry in Unix ms (the
// key lives while the ms clock <= it).
type storedKey struct {
	tat        int64
	expireAtMs int64
}

// keyspace models that storage: after an allowed call the key expires at
// now_ms + trunc_ms(ttl) (RedisModule_SetExpire), which can fall up to ~1 ms
// before the TAT, so a key may vanish while its TAT is still in the future.
// A TTL of -1 ms (no expiry in redis-cell) or the expire error leaves a TAT in
// the past, which the spec has Redcell treat as absent.
type keyspace map[string]storedKey

func (ks keyspace) lookup(key string, now int64) (int64, bool) {
	k, ok := ks[key]
	return k.tat, ok && floorDiv(now, nanosPerMilli) <= k.expireAtMs
}

func (ks keyspace) store(key string, newTAT, now int64) {
	ttlMs := (newTAT - now) / nanosPerMilli
	if newTAT <= now || ttlMs < 0 {
		delete(ks, key)
		return
	}
	ks[key] = storedKey{tat: newTAT, expireAtMs: floorDiv(now, nanosPerMilli) + ttlMs}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// throttleCommand executes one CL.THROTTLE (args include the command name)
// against ks at now. It returns the reply, or the error text as a client
// sees it (without the leading '-').
func throttleCommand(t *testing.T, ks keyspace, now int64, args []string) (Reply, string) {
	t.Helper()
	if len(args) != 5 && len(args) != 6 {
		return Reply{}, cellErrorPrefix + usageText
	}
	var ints [4]int64
	ints[3] = 1 // quantity defaults to 1
	for i, arg := range args[2:] {
		v, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return Reply{}, cellErrorPrefix + "Couldn't parse as integer: " + arg
		}
		ints[i] = v
	}
	p, err := NewParams(ints[0], ints[1], ints[2], ints[3])
	if err != nil {
		return Reply{}, cellErrorPrefix + err.Error()
	}
	key := args[1]
	tat, present := ks.lookup(key, now)

	// CL.PEEK must answer the same with no effect; check it on every step.
	peekReply, peekErr := Peek(tat, present, now, p)

	r, newTAT, o := Throttle(tat, present, now, p)
	if peekReply != r {
		t.Errorf("Peek reply %+v != Throttle reply %+v", peekReply, r)
	}
	if (peekErr != nil) != (o == StoreExpireError) {
		t.Errorf("Peek error %v with Throttle outcome %v", peekErr, o)
	}
	switch o {
	case Keep:
		if r.Limited != 1 {
			t.Errorf("outcome Keep with allowed reply %+v", r)
		}
	case Store:
		if r.Limited != 0 {
			t.Errorf("outcome Store with limited reply %+v", r)
		}
		ks.store(key, newTAT, now)
	case StoreExpireError:
		if newTAT > now {
			t.Errorf("StoreExpireError with newTAT %d > now %d: the key would live", newTAT, now)
		}
		ks.store(key, newTAT, now)
		return Reply{}, cellErrorPrefix + ErrExpire.Error()
	default:
		t.Fatalf("unknown outcome %v", o)
	}
	return r, ""
}

// TestVectors_CLThrottle replays every scenario and requires every reply,
// and every stored TAT and expiry, to match redis-cell's, with no exceptions.
func TestVectors_CLThrottle(t *testing.T) {
	scenarios, err := vectors.Load("cl_throttle.jsonl")
	if err != nil {
		t.Fatal(err) // never skip: a missing contract must not look like a pass
	}
	steps := 0
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) {
			ks := keyspace{}
			for i, step := range s.Steps {
				steps++
				wantReply, wantErr := expectedVectorReply(t, i, step)
				gotReply, gotErr := throttleCommand(t, ks, step.TimeNs, step.Args)
				if gotErr != wantErr || gotReply != wantReply {
					t.Fatalf("step %d at %d %q:\n got reply %v err %q\nwant reply %v err %q",
						i, step.TimeNs, step.Args[1:], gotReply, gotErr, wantReply, wantErr)
				}
				checkStateAfter(t, i, ks, step)
			}
		})
	}
	if steps < 300 {
		t.Errorf("replayed only %d steps; the vector file looks truncated", steps)
	}
}

// checkStateAfter compares the model's keys with redis-cell's stored state.
// A key redis-cell left with a TAT at or before now is absent for Redcell
// (spec: a TAT in the past behaves like an absent key).
func checkStateAfter(t *testing.T, i int, ks keyspace, step vectors.Step) {
	t.Helper()
	for key, want := range step.StateAfter {
		got, alive := ks.lookup(key, step.TimeNs)
		switch {
		case want == nil || want.ExpireAtMs == nil || tatAtOrBefore(want.Value, step.TimeNs):
			// Also a key redis-cell keeps for the rest of the millisecond
			// with TAT == now (quantity 0): it decides exactly like an
			// absent key, and the spec says such a call leaves no key.
			if alive {
				t.Errorf("step %d: key %q: got TAT %d, want absent (or a past TAT without expiry)", i, key, got)
			}
		case !alive:
			t.Errorf("step %d: key %q: absent, want TAT %s expiring at %d ms", i, key, want.Value, *want.ExpireAtMs)
		case strconv.FormatInt(got, 10) != want.Value || ks[key].expireAtMs != *want.ExpireAtMs:
			t.Errorf("step %d: key %q: got TAT %d expiring at %d ms, want %s at %d ms",
				i, key, got, ks[key].expireAtMs, want.Value, *want.ExpireAtMs)
		}
	}
}

func tatAtOrBefore(value string, now int64) bool {
	tat, err := strconv.ParseInt(value, 10, 64)
	return err == nil && tat <= now
}

// expectedVectorReply decodes a step's expected reply and checks that the
// step is a CL.THROTTLE.
func expectedVectorReply(t *testing.T, i int, step vectors.Step) (Reply, string) {
	t.Helper()
	if len(step.Args) == 0 || !strings.EqualFold(step.Args[0], "CL.THROTTLE") {
		t.Fatalf("step %d: not a CL.THROTTLE: %q", i, step.Args)
	}
	e, err := step.Expected()
	if err != nil {
		t.Fatalf("step %d: %v", i, err)
	}
	if e.Err != nil {
		return Reply{}, *e.Err
	}
	if len(e.Ints) != 5 {
		t.Fatalf("step %d: reply %s: want 5 integers", i, step.Reply)
	}
	a := e.Ints
	return Reply{a[0], a[1], a[2], a[3], a[4]}, ""
}
