package group

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The disk gate: group commit that follows the disk.
//
// A request's latency is dominated by the fsync of the entry that carries it,
// and the disk does one fsync at a time: hashicorp/raft's leader goroutine
// writes an entry to the log store (blocking for the fsync) before it looks
// at the next. So the best entry to propose next is the one proposed at the
// instant the disk becomes free, carrying every request that arrived while
// it was busy. Proposing earlier makes a small entry that waits for the disk
// anyway while the requests behind it queue for the one after; proposing
// later (when the previous entry is applied, as the in-flight slots alone
// do) leaves the disk idle while the previous entry is committed, applied
// and answered.
//
// So the proposer keeps at most one entry that is proposed but not yet
// durable in the leader's log (diskFree), and the log store wrapper below
// wakes it the moment an append is durable. The in-flight slots still bound
// the entries between "durable here" and "applied": in a cluster those wait
// for a follower's fsync, and meanwhile the leader's disk takes the next.
//
// Stragglers. Clients that do not pipeline come back one by one after their
// replies: the first to return would find the disk free and go alone, and
// every other would wait for that one-request fsync before its own — two
// fsyncs per round of clients instead of one. So when the last entry
// answered several batches (clients likely to come back), a free disk waits
// for as many to queue, at most half an append's recent duration (a wait
// longer than the fsync it saves cannot pay off) — and a quarter when that
// entry's batches were single requests: a straggler then is one decision,
// which the next entry carries anyway, and the node usually has nothing else
// to do while it waits, where pipelining clients keep it busy parsing
// (measured, DESIGN.md "Stragglers"). One batch, or a lone client, never
// waits.
//
// The gate only shapes batches; it never holds a request for good. Every
// proposed entry is eventually stored or fails, and the completer marks it
// passed either way, so a lost notification (a leadership change, an entry
// raft refused) costs at most one entry's wait; a lingering queue is
// proposed by its timer.
type diskGate struct {
	proposed atomic.Uint64 // entries proposed (sequence of the newest); written under proposeMu
	stored   atomic.Uint64 // entries known durable in the local log (≤ proposed)
	wake     chan struct{} // buffer 1: an append became durable

	expect      atomic.Int64 // batches the last applied entry answered
	pipelined   atomic.Bool  // they held two or more requests each, on average
	appendNanos atomic.Int64 // moving average of a durable append's duration
	lingering   atomic.Bool  // the linger timer is armed
	lingerDone  atomic.Bool  // it fired: propose what there is
	timer       *time.Timer
	maxLinger   time.Duration // set at Open (defaultMaxLinger; tests change it)
}

// defaultMaxLinger bounds the wait for stragglers whatever the disk's speed.
const defaultMaxLinger = 500 * time.Microsecond

// linger is how long a free disk waits for stragglers: half an append after
// an entry of pipelines, a quarter after one of single requests.
func (d *diskGate) linger() time.Duration {
	wait := d.appendNanos.Load() / 4
	if d.pipelined.Load() {
		wait = d.appendNanos.Load() / 2
	}
	return min(time.Duration(wait), d.maxLinger)
}

// noteAppend folds one durable append's duration into the average (1/8 weight).
func (d *diskGate) noteAppend(took time.Duration) {
	old := d.appendNanos.Load()
	d.appendNanos.Store(old + (int64(took)-old)/8)
}

// holdForStragglers reports whether the queued batches (queued of them)
// should wait for more before they go to the free disk, and arms the timer
// that ends the wait.
func (d *diskGate) holdForStragglers(queued int) bool {
	if queued == 0 || int64(queued) >= d.expect.Load() || d.lingerDone.Load() {
		return false
	}
	if d.lingering.CompareAndSwap(false, true) {
		d.timer.Reset(d.linger())
	}
	return true
}

// proposing ends a wait for stragglers: the entry being built takes what
// queued. Called under proposeMu before the queue is taken.
func (d *diskGate) proposing() {
	if d.lingering.Swap(false) {
		d.timer.Stop()
	}
	d.lingerDone.Store(false)
}

// free reports whether every proposed entry is durable here, so that the
// next entry can go to the disk at once.
func (d *diskGate) free() bool { return d.stored.Load() >= d.proposed.Load() }

// passed records that the entries up to seq are durable (or failed: either
// way they no longer hold the disk).
func (d *diskGate) passed(seq uint64) {
	for {
		cur := d.stored.Load()
		if cur >= seq || d.stored.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// appended is called by raft's goroutine after an append of n command
// entries is durable. On the leader every command entry in its log was
// proposed by this group, in order; on a follower nothing is proposed and
// the count is capped at what was. It returns the sequence numbers that
// became durable: (from, to].
func (d *diskGate) appended(n uint64) (from, to uint64) {
	for {
		cur, top := d.stored.Load(), d.proposed.Load()
		next := min(cur+n, top)
		if next == cur || d.stored.CompareAndSwap(cur, next) {
			from, to = cur, next
			break
		}
	}
	select {
	case d.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
	return from, to
}

// lingerOver is the linger timer's function: the wait for stragglers is
// over, propose what queued.
func (g *Group) lingerOver() {
	g.disk.lingerDone.Store(true)
	g.disk.lingering.Store(false)
	g.proposeQueued()
}

// runDiskGate proposes what queued while the disk was busy, each time an
// append becomes durable. It cannot be done on raft's goroutine itself,
// which is the one that takes proposals in.
func (g *Group) runDiskGate() {
	defer g.wg.Done()
	for {
		select {
		case <-g.disk.wake:
			g.proposeQueued()
		case <-g.stopCh:
			return
		}
	}
}

// watchedLogStore is the log store as raft sees it: every durable append of
// command entries is reported to the disk gate, and while the node has peers
// the newest entries are read back from recent (recentlogs.go). Everything
// else passes through.
type watchedLogStore struct {
	raft.LogStore
	gate   *diskGate
	times  *commitTimes
	recent *recentLogs
	own    []byte // this node's origin tag (fsm.SetOrigin)
}

// GetLog serves the entry from the recent entries when it is there.
func (w *watchedLogStore) GetLog(index uint64, log *raft.Log) error {
	if w.recent.get(index, log) {
		return nil
	}
	return w.LogStore.GetLog(index, log)
}

// DeleteRange forgets the entries in the cache first, so that no read finds
// there an entry the store no longer has once the delete returns.
func (w *watchedLogStore) DeleteRange(min, max uint64) error {
	w.recent.drop(min, max)
	return w.LogStore.DeleteRange(min, max)
}

// StoreLog is StoreLogs of one entry.
func (w *watchedLogStore) StoreLog(l *raft.Log) error {
	return w.StoreLogs([]*raft.Log{l})
}

// StoreLogs stores the entries (one fsync) and then reports them.
func (w *watchedLogStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	if err := w.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	w.gate.noteAppend(time.Since(start))
	w.recent.add(logs, w.own)
	var n uint64
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			n++
		}
	}
	if n > 0 {
		w.times.stampDurable(w.gate.appended(n))
	}
	return nil
}

// IsMonotonic forwards raft.MonotonicLogStore: raft asks it to decide
// whether a snapshot install may leave a gap in the log.
func (w *watchedLogStore) IsMonotonic() bool {
	m, ok := w.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
