package server

import (
	"fmt"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// WATCH across nodes (fsm/watchguard.go has the rules). WATCH reads, from
// the state machine of the node this connection is on, the applied index w,
// the term of the last applied entry, the replicated clock and whether each
// key is live (request.WatchMark); the connection keeps that until EXEC,
// which proposes a request.WatchGuard first in the transaction's batch. The
// state machine decides there, in the same log entry as the transaction and
// identically on every replica, whether a watched key changed since w, and
// skips the transaction if so; EXEC then answers a nil array, as Redis.
// Reading a follower's possibly stale state is safe: staleness makes the
// guard see more changes (extra aborts), never fewer.
//
// Only the connection's goroutine touches a watchState.
type watchState struct {
	// keys are the watched keys (copied, each once) with what the WATCH
	// that first named each read: as in Redis, watching a key again keeps
	// its first watch, so a change between the two WATCHes still counts.
	keys []request.WatchedKey
	seen map[string]struct{}
	term uint64 // the term the first WATCH read
	// doomed: two WATCHes saw different terms (a leader changed between
	// them), so EXEC fails whatever happens.
	doomed bool
}

// active reports whether a WATCH is in force.
func (ws *watchState) active() bool { return len(ws.keys) > 0 }

// reset forgets every watched key (UNWATCH, EXEC, DISCARD, RESET).
func (ws *watchState) reset() {
	*ws = watchState{}
}

// add merges one WatchMark answer for keys (aliasing the caller's buffer)
// into the state. A key watched already keeps its first mark, as in Redis.
func (ws *watchState) add(keys [][]byte, res *request.Result) {
	w, term, tw := uint64(res.Ints[0]), uint64(res.Ints[1]), res.Ints[2]
	if !ws.active() {
		ws.term = term
		ws.seen = make(map[string]struct{}, len(keys))
	} else if term != ws.term {
		ws.doomed = true
	}
	for i, k := range keys {
		if _, dup := ws.seen[string(k)]; dup {
			continue
		}
		ws.seen[string(k)] = struct{}{}
		ws.keys = append(ws.keys, request.WatchedKey{
			Key: append([]byte(nil), k...), Live: i < len(res.Data) && res.Data[i] == 1, W: w, TW: tw,
		})
	}
}

// guard is the WatchGuard of a transaction of n requests.
func (ws *watchState) guard(n int) request.Request {
	return request.NewWatchGuard(ws.keys, ws.term, n)
}

// guardAborted reads the guard's result: aborted when a watched key
// changed (text ""), or when the state machine refused the guard (its
// error's text, which only a faulty leader can cause).
func guardAborted(res *request.Result) (aborted bool, text string) {
	switch {
	case res.Kind == request.KindError:
		return true, commands.ResultErrText(res.Err)
	case res.Kind != request.KindInt:
		return true, fmt.Sprintf("ERR the state machine answered a watch guard with a reply of kind %d", res.Kind)
	}
	return res.Ints[0] != 0, ""
}

// WATCH key [key ...]
// Watches the keys: the next EXEC on this connection answers a nil array,
// running nothing, if any of them was changed, expired or deleted in the
// meantime (through any node), if FLUSHALL ran, or if the cluster's leader
// changed. Inside MULTI it answers Redis's error.
func cmdWatch(c *conn, _ *commands.Spec, args [][]byte) {
	if c.tx.active {
		c.fail(commands.ErrWatchInMulti)
		return
	}
	keys := args[1:]
	if c.keysCrossSlots(keys) { // slots.go
		c.fail(commands.ErrCrossSlot)
		return
	}
	reqs := [1]request.Request{{Code: request.WatchMark, Keys: keys}}
	var res [1]request.Result
	if err := c.s.cfg.Backend.ReadLocal(reqs[:], res[:]); err != nil {
		c.fail(backendErrText(err))
		return
	}
	if res[0].Kind == request.KindError {
		c.fail(commands.ResultErrText(res[0].Err))
		return
	}
	c.watch.add(keys, &res[0])
	c.w.OK()
}

// UNWATCH
// Forgets every watched key of the connection.
func cmdUnwatch(c *conn, _ *commands.Spec, _ [][]byte) {
	c.watch.reset()
	c.w.OK()
}
