package group

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// recentLogs keeps copies of the newest entries this node appended, so that
// raft reads them back from memory instead of from the log store while the
// node has peers.
//
// Why. hashicorp/raft reads every entry it replicates back from the log
// store, once per follower (setNewLogs), and reads the entry before them in
// full for its term (setPreviousLog); a follower reads each entry it just
// appended to apply it (processLogs). Each such GetLog is a Pebble lookup, a
// decode and an allocation of the whole entry: on the leader of a 3-node
// cluster at -c 50 -P 16 (entries of ~20 KB) they were 79 % of everything it
// allocated (16 MB/s, which with GOGC=25 and a small heap drives the
// collector) and 2.9 % of its CPU, on a follower 22 % of its allocation and
// 2.5 % of its CPU. raft.LogCache does this too, but keeps the caller's *Log:
// the leader's entries hold the proposer's pooled encoder buffers, which are
// reused once the entry is applied, so a cache must copy those (and only
// those: see add). A cache is also bounded here in bytes, not entries,
// because an entry may be up to MaxEntryBytes.
//
// Alone, nothing reads recent entries back (the leader applies from its own
// futures), so the cache is off and costs nothing; runAloneMode switches it.
//
// Sharing. GetLog hands out the cached copy's Data and Extensions without
// copying them again, as raft.LogCache does: raft and the state machine
// only read an entry's bytes. The copy is never reused or changed once
// cached, only dropped, so a reader keeps valid bytes however long it holds
// them.
//
// Goroutines: add and drop are called by whoever appends to or deletes from
// the log (raft's main goroutine; its snapshot goroutine compacts with
// DeleteRange), get by raft's replication goroutines and its FSM goroutine.
// One mutex guards the ring; the enabled flag is atomic.
type recentLogs struct {
	enabled atomic.Bool
	// hits and misses count gets while enabled (INFO raft_log_cache_*).
	hits, misses atomic.Uint64

	mu       sync.RWMutex
	ring     []*raft.Log // circular; ring[(head+i)%len] has index first+i
	head     int
	count    int
	first    uint64 // index of the oldest cached entry (when count > 0)
	bytes    int    // Data + Extensions held
	maxBytes int
}

// Bounds of the cache: with one entry in flight a follower is an entry or
// two behind the leader's log, so a few entries serve every read on the
// steady path; the bytes bound keeps huge entries (MaxEntryBytes) from
// taking memory the keyspace needs.
const (
	recentLogsMax      = 64
	recentLogsMaxBytes = 2 << 20
)

func newRecentLogs() *recentLogs {
	return &recentLogs{ring: make([]*raft.Log, recentLogsMax), maxBytes: recentLogsMaxBytes}
}

// setEnabled turns the cache on or off; off also empties it.
func (c *recentLogs) setEnabled(on bool) {
	if c.enabled.Swap(on) == on || on {
		return
	}
	c.mu.Lock()
	c.reset()
	c.mu.Unlock()
}

// add caches entries that were just stored durably, in index order.
// Entries that do not continue the cached run (after a snapshot install or
// a truncation) restart it. The bytes of this node's own proposals (own in
// their Extensions, fsm.SetOrigin) are copied: they are the proposer's
// pooled encoder buffers. Any other entry's bytes are raft's, decoded from
// an RPC or made by raft itself, and nothing writes them again, so they are
// kept as they are.
func (c *recentLogs) add(logs []*raft.Log, own []byte) {
	if !c.enabled.Load() || len(logs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		size := len(l.Data) + len(l.Extensions)
		if size > c.maxBytes {
			c.reset() // too big to keep; and the run would have a gap
			continue
		}
		if c.count > 0 && l.Index != c.first+uint64(c.count) {
			c.reset()
		}
		for c.count > 0 && (c.count == len(c.ring) || c.bytes+size > c.maxBytes) {
			c.dropOldest()
		}
		if c.count == 0 {
			c.first = l.Index
		}
		c.ring[(c.head+c.count)%len(c.ring)] = storedCopy(l, own != nil && bytes.Equal(l.Extensions, own))
		c.count++
		c.bytes += size
	}
}

// get fills log with the cached entry at index; false if it is not cached.
func (c *recentLogs) get(index uint64, log *raft.Log) bool {
	if !c.enabled.Load() {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.count == 0 || index < c.first || index-c.first >= uint64(c.count) {
		c.misses.Add(1)
		return false
	}
	*log = *c.ring[(c.head+int(index-c.first))%len(c.ring)]
	c.hits.Add(1)
	return true
}

// drop forgets cached entries in min..max (inclusive), as the log store
// deletes them. A prefix or a suffix of the run is cut off; anything else
// empties the cache.
func (c *recentLogs) drop(min, max uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count == 0 || min > max {
		return
	}
	last := c.first + uint64(c.count) - 1
	switch {
	case max < c.first || min > last:
	case min <= c.first && max >= last:
		c.reset()
	case min <= c.first:
		for c.count > 0 && c.first <= max {
			c.dropOldest()
		}
	case max >= last:
		for c.count > 0 && c.first+uint64(c.count)-1 >= min {
			c.dropNewest()
		}
	default:
		c.reset()
	}
}

// dropOldest removes the oldest entry. c.mu is held; count > 0.
func (c *recentLogs) dropOldest() {
	l := c.ring[c.head]
	c.bytes -= len(l.Data) + len(l.Extensions)
	c.ring[c.head] = nil
	c.head = (c.head + 1) % len(c.ring)
	c.count--
	c.first++
}

// dropNewest removes the newest entry. c.mu is held; count > 0.
func (c *recentLogs) dropNewest() {
	c.count--
	i := (c.head + c.count) % len(c.ring)
	c.bytes -= len(c.ring[i].Data) + len(c.ring[i].Extensions)
	c.ring[i] = nil
}

// reset empties the cache. c.mu is held.
func (c *recentLogs) reset() {
	clear(c.ring)
	c.head, c.count, c.first, c.bytes = 0, 0, 0, 0
}

// storedCopy is the entry as the log store gives it back (raftstore's
// decodeLog): empty Data and Extensions nil, AppendedAt a plain wall time,
// and with copyBytes Data and Extensions copied into one allocation.
func storedCopy(l *raft.Log, copyBytes bool) *raft.Log {
	cp := *l
	cp.Data, cp.Extensions = nil, nil
	if !copyBytes {
		if len(l.Data) > 0 {
			cp.Data = l.Data
		}
		if len(l.Extensions) > 0 {
			cp.Extensions = l.Extensions
		}
	} else if n := len(l.Data) + len(l.Extensions); n > 0 {
		buf := make([]byte, n)
		if len(l.Data) > 0 {
			// Full slice expression: appending to Data cannot reach Extensions.
			cp.Data = buf[:len(l.Data):len(l.Data)]
			copy(cp.Data, l.Data)
		}
		if len(l.Extensions) > 0 {
			cp.Extensions = buf[len(l.Data):]
			copy(cp.Extensions, l.Extensions)
		}
	}
	if !l.AppendedAt.IsZero() {
		cp.AppendedAt = time.Unix(l.AppendedAt.Unix(), int64(l.AppendedAt.Nanosecond()))
	}
	return &cp
}
