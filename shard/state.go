package shard

// Kind is the limiter family owning a key. A key belongs to one family at a
// time; the shard stores the value and never interprets it.
type Kind uint8

const (
	KindNone          Kind = iota
	KindGCRA               // CL.* (redis-cell); A is the TAT, Expire redis-cell's millisecond expiry
	KindTokenGreedy        // TB.* greedy
	KindTokenInterval      // TB.* INTERVAL
	KindSlidingLog         // SL.* (future: A/B will reference an external log)
)

// State is one key's limiter state: 25 meaningful bytes, no pointers.
//
// The key exists iff now < Expire. At or after Expire the key is equivalent to
// a fresh one: every method of Store behaves as if it were absent (Update
// passes the zero State with live=false, Get reports false, Len, Delete and
// Snapshot ignore it). That is what makes results independent of when the
// sweeper happens to reclaim the entry.
type State struct {
	Kind   Kind
	Expire int64 // Unix ns at which the key becomes equivalent to fresh
	A, B   int64 // family-specific
}

// Action tells Update what to do with the key after the callback.
type Action uint8

const (
	// Keep leaves the stored entry as it was (absent stays absent).
	Keep Action = iota
	// Put stores the returned State. Putting a State that is not live at the
	// call's now (Expire <= now) is the same as Delete: the key would be
	// invisible anyway, so its memory is reclaimed at once.
	Put
	// Delete removes the key.
	Delete
)

// live reports whether st makes its key exist at now.
func (st State) live(now int64) bool { return now < st.Expire }
