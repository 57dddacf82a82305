package server

import (
	"sync/atomic"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// transaction is a connection's MULTI state. Between MULTI and EXEC every
// command is validated and queued; EXEC hands all queued requests, writes
// and reads alike, to the backend as one Propose call. One call is one batch,
// and the group never splits a batch across log entries (a follower forwards
// it to the leader as one frame, which the leader proposes as one batch), so
// the transaction is decided in one log entry: atomically, in order, at the
// entry's one instant of the replicated clock. Reads inside it are answered
// by the state machine inside that entry, so they see the transaction's own
// earlier writes and nothing else.
//
// Only the connection's goroutine touches it.
type transaction struct {
	active bool
	// dirty: a command was refused while queueing (unknown, wrong arity,
	// too large, LOADING), so EXEC answers EXECABORT. Invalid arguments do
	// not make it dirty: as in Redis, such a command is queued and answers
	// its error inside EXEC's array (txItem.err).
	dirty bool
	items []txItem
	reqs  []request.Request // the queued requests, in order; keys copied
	res   []request.Result
	bytes int // what the queue holds: encoded requests and copied arguments
	// shown is what CLIENT LIST, run by other connections, reads: queued
	// commands + 1 inside MULTI, 0 outside.
	shown atomic.Int32
}

// txItem is one queued command: a request (an index into reqs), a
// connection command, run by its handler when EXEC writes its reply, or a
// command whose arguments were refused, which answers err there.
type txItem struct {
	spec *commands.Spec
	req  int      // index into transaction.reqs; -1 for a connection command or an error
	args [][]byte // a connection command's arguments, copied
	err  string   // the refusal of a command with invalid arguments
	// logged is the command's arguments as the slow log keeps them, for
	// when EXEC runs it (cmdstats.go); nil while the slow log is off.
	logged []string
}

// maxTransactionBytes bounds what a transaction may queue: its requests
// become one batch of one log entry, which MaxRequestLogBytes bounds for a
// single request for the same reasons (one fsync and one replication
// message, stalling every other write behind it), and the queue lives in
// the connection's memory until EXEC.
const maxTransactionBytes = commands.MaxRequestLogBytes

// runsInsideMulti reports whether a command acts at once inside MULTI
// instead of being queued: those that end or reset the transaction, QUIT,
// and WATCH (which answers its error there), as in Redis
// (processCommand's exceptions). UNWATCH is queued and answers OK in
// EXEC's array, as in Redis.
func runsInsideMulti(s *commands.Spec) bool {
	switch s.Name {
	case "multi", "exec", "discard", "watch", "quit", "reset":
		return true
	}
	return false
}

func (t *transaction) reset() {
	clear(t.items) // drop the copied arguments
	t.items = t.items[:0]
	clear(t.reqs)
	t.reqs = t.reqs[:0]
	t.active, t.dirty, t.bytes = false, false, 0
	t.shown.Store(0)
}

// reject answers a command refused before it runs (unknown, wrong arity,
// LOADING; invalid arguments outside MULTI) and, inside MULTI, marks the
// transaction so that EXEC discards it, as Redis does for errors at queue
// time.
func (c *conn) reject(text string) {
	c.stat.rejected = true // rejected_calls (cmdstats.go)
	c.answerPending()
	c.fail(text)
	if c.tx.active {
		c.tx.dirty = true
	}
}

// enqueue validates a command inside MULTI and queues it, answering +QUEUED,
// or rejects it. Limiter and keyspace commands are parsed now, exactly as
// outside a transaction; their keys are copied, because the read buffer they
// alias is reused before EXEC. One whose arguments are invalid is queued as
// its error, as Redis 7 does (it checks only the command and its arity while
// queueing, and a command's own argument errors come when EXEC runs it):
// EXEC answers that error in its place and runs the others. It never reaches
// the log.
func (c *conn) enqueue(spec *commands.Spec, args [][]byte) {
	switch spec.Class {
	case commands.Write, commands.Read:
		var r request.Request
		var e string
		if spec.Class == commands.Write {
			e = commands.ParseWrite(spec, args, &r)
		} else {
			e = commands.ParseRead(spec, args, &r)
		}
		if e != "" {
			c.tx.items = append(c.tx.items, txItem{spec: spec, req: -1, err: e})
			break
		}
		if c.crossSlot(&r) { // slots.go
			c.reject(commands.ErrCrossSlot)
			return
		}
		n := request.EncodedLen(&r)
		if c.tx.bytes+n > maxTransactionBytes {
			c.reject(commands.TransactionTooLarge(c.tx.bytes + n))
			return
		}
		c.tx.bytes += n
		copyKeys(&r)
		c.tx.items = append(c.tx.items, txItem{spec: spec, req: len(c.tx.reqs)})
		c.tx.reqs = append(c.tx.reqs, r)
	default:
		if e := subcommandError(spec, args); e != "" { // auth.go
			c.reject(e)
			return
		}
		if spec.HasFlag("no_multi") { // SAVE, SHUTDOWN: Redis refuses them here
			c.reject("ERR Command not allowed inside a transaction")
			return
		}
		n := 0
		for _, a := range args {
			n += len(a) + 16 // the slice header it costs, roughly
		}
		if c.tx.bytes+n > maxTransactionBytes {
			c.reject(commands.TransactionTooLarge(c.tx.bytes + n))
			return
		}
		c.tx.bytes += n
		c.tx.items = append(c.tx.items, txItem{spec: spec, req: -1, args: copyArgs(args)})
	}
	c.tx.shown.Store(int32(len(c.tx.items)) + 1)
	c.w.Simple("QUEUED")
}

// copyKeys makes r's keys its own, in one allocation.
func copyKeys(r *request.Request) {
	n := len(r.Key)
	for _, k := range r.Keys {
		n += len(k)
	}
	buf := make([]byte, 0, n)
	if r.Key != nil {
		buf = append(buf, r.Key...)
		r.Key = buf[:len(r.Key):len(r.Key)]
	}
	if r.Keys != nil {
		keys := make([][]byte, len(r.Keys))
		for i, k := range r.Keys {
			at := len(buf)
			buf = append(buf, k...)
			keys[i] = buf[at:len(buf):len(buf)]
		}
		r.Keys = keys
	}
}

// copyArgs copies a command's arguments, in one allocation for the bytes.
func copyArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		at := len(buf)
		buf = append(buf, a...)
		out[i] = buf[at:len(buf):len(buf)]
	}
	return out
}

// MULTI
// Marks the start of a transaction: the following commands are queued
// (answered +QUEUED) and run by EXEC atomically, in one log entry.
func cmdMulti(c *conn, _ *commands.Spec, _ [][]byte) {
	if c.tx.active {
		c.fail(commands.ErrMultiNested)
		return
	}
	c.tx.active = true
	c.tx.shown.Store(1)
	c.w.OK()
}

// EXEC
// Runs the queued commands as one log entry and answers an array with the
// reply of each, in order; EXECABORT when a command was refused while
// queueing (nothing runs then).
func cmdExec(c *conn, _ *commands.Spec, _ [][]byte) {
	if !c.tx.active {
		c.fail(commands.ErrExecNoMulti)
		return
	}
	watched := c.watch.active()
	if c.tx.dirty {
		c.tx.reset()
		c.watch.reset()
		c.fail(commands.ErrExecAbort)
		return
	}
	if watched && c.watch.doomed {
		// Two WATCHes saw different terms: a leader changed in between.
		c.tx.reset()
		c.watch.reset()
		c.w.NullArray()
		return
	}
	reqs := c.tx.reqs
	if c.unitCrossesSlots(reqs, c.watch.keys) { // slots.go
		c.tx.reset()
		c.watch.reset()
		c.fail(commands.ErrCrossSlot)
		return
	}
	batch := reqs
	if watched {
		// The guard goes first, in the same batch, so in the same entry:
		// the state machine decides there whether a watched key changed
		// and skips the transaction if so (watch.go).
		batch = make([]request.Request, 0, len(reqs)+1)
		batch = append(batch, c.watch.guard(len(reqs)))
		batch = append(batch, reqs...)
		c.watch.reset()
	}
	if cap(c.tx.res) < len(batch) {
		c.tx.res = make([]request.Result, len(batch))
	}
	res := c.tx.res[:len(batch)]
	for i := range batch {
		if c := batch[i].Code; c == request.Eval || c == request.EvalSha {
			// A transaction applies as one entry: none of its scripts may
			// be deferred out of it (fsm/deferred.go).
			batch[i].Mark(request.MarkWholeBudget)
		}
	}
	c.trackReads(reqs) // before they run: see tracking.go
	if len(batch) > 0 {
		noloop := c.noloopBegin(reqs)
		err := c.s.cfg.Backend.Transact(batch, res)
		c.countDecisions(batch, res, err) // metrics.go
		if noloop {
			c.noloopEnd()
		}
		if err != nil {
			// The whole transaction failed as one batch: one error,
			// telling the client what it may assume (nothing happened,
			// or the outcome is unknown), for all of it.
			c.tx.reset()
			c.fail(backendErrText(err))
			return
		}
	}
	if watched {
		guard := res[0]
		res = res[1:]
		if aborted, text := guardAborted(&guard); aborted {
			clear(c.tx.res)
			c.tx.reset()
			if text != "" {
				c.fail(text)
				return
			}
			c.w.NullArray() // as Redis: a watched key changed
			return
		}
	}
	items := c.tx.items
	c.tx.active = false // connection commands inside run as outside
	c.w.Array(len(items))
	for i := range items {
		it := &items[i]
		if it.req >= 0 {
			c.writeResult(&res[it.req])
			continue
		}
		if it.err != "" {
			c.fail(it.err)
			continue
		}
		handlers[it.spec.Name](c, it.spec, it.args)
	}
	c.recordTransaction(items, res) // cmdstats.go
	clear(c.tx.res)                 // drop the key lists of SCAN and KEYS results
	c.tx.reset()
}

// DISCARD
// Drops the queued commands and leaves the transaction.
func cmdDiscard(c *conn, _ *commands.Spec, _ [][]byte) {
	if !c.tx.active {
		c.fail(commands.ErrDiscardNoMulti)
		return
	}
	c.tx.reset()
	c.watch.reset()
	c.w.OK()
}
