package server

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redcell/redcell/commands"
)

// With the same-slot rules on, an atomic unit across slots is refused with
// CROSSSLOT before it reaches the backend: a multi-key write, a script's
// KEYS, WATCH, a command queued in MULTI (EXEC then aborts), and EXEC of a
// transaction whose commands lie in several slots. A command the node
// splits (DEL) and a unit within one slot go through. With the rules off
// (one group) nothing is refused.
func TestSameSlotRules(t *testing.T) {
	ctx := context.Background()
	for _, same := range []bool{true, false} {
		backend := &stubBackend{}
		addr := serveBackend(t, Config{SameSlot: same}, backend)
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1})
		refused := func(what string, err error) {
			t.Helper()
			isCross := err != nil && err.Error() == commands.ErrCrossSlot
			if isCross != same {
				t.Errorf("SameSlot %v, %s: %v", same, what, err)
			}
		}
		before := backend.proposed
		refused("MSET a b", rdb.Do(ctx, "MSET", "a", "1", "b", "2").Err())
		refused("EVAL with KEYS a b", rdb.Do(ctx, "EVAL", "return 1", "2", "a", "b").Err())
		refused("WATCH a b", rdb.Do(ctx, "WATCH", "a", "b").Err())
		if same && backend.proposed != before {
			t.Errorf("%d refused requests reached the backend", backend.proposed-before)
		}
		if err := rdb.Do(ctx, "DEL", "a", "b").Err(); err != nil {
			t.Errorf("SameSlot %v, DEL across slots: %v", same, err)
		}
		if err := rdb.Do(ctx, "MSET", "{t}a", "1", "{t}b", "2").Err(); err != nil {
			t.Errorf("SameSlot %v, MSET within a slot: %v", same, err)
		}

		// A refused command inside MULTI discards the transaction.
		conn := rdb.Conn()
		if err := conn.Process(ctx, redis.NewStatusCmd(ctx, "MULTI")); err != nil {
			t.Fatal(err)
		}
		refused("MSET a b queued", conn.Process(ctx, redis.NewCmd(ctx, "MSET", "a", "1", "b", "2")))
		execErr := conn.Process(ctx, redis.NewCmd(ctx, "EXEC"))
		if want := same; (execErr != nil && execErr.Error() == commands.ErrExecAbort) != want {
			t.Errorf("SameSlot %v: EXEC after a refusal while queueing: %v", same, execErr)
		}
		// Commands each within a slot, together across two: EXEC refuses.
		if err := conn.Process(ctx, redis.NewStatusCmd(ctx, "MULTI")); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b"} {
			if err := conn.Process(ctx, redis.NewCmd(ctx, "SET", k, "1")); err != nil {
				t.Fatalf("SET %s queued: %v", k, err)
			}
		}
		refused("EXEC of SET a, SET b", conn.Process(ctx, redis.NewCmd(ctx, "EXEC")))
		if err := conn.Process(ctx, redis.NewCmd(ctx, "EXEC")); err == nil || err.Error() != commands.ErrExecNoMulti {
			t.Errorf("SameSlot %v: a second EXEC: %v, want %s (the transaction is gone)", same, err, commands.ErrExecNoMulti)
		}
		conn.Close()
		rdb.Close()
	}
}
