package shard

// Kind is what a key holds: which family's state, in which mode. A key has
// one kind at a time; the shard stores it and never interprets it. The
// numbers are request.KeyKind's, described with their families in package
// request (the families' fsm files say what A, B and Val hold); the shard
// needs them at most MaxKind (4 bits of a record's layout byte). 0 is no
// kind (the zero State).
type Kind uint8

// State is one key's limiter state: a Kind, three int64s and, for families
// whose state has no fixed size, a variable-length value; and the store's
// change marker of the key (Mark), which families never set. A record keeps
// only the fields its state needs (record.go): a CL key its TAT, a string
// its Expire.
//
// The key exists iff now < Expire. At or after Expire the key is equivalent to
// a fresh one: every method of Store behaves as if it were absent (Update
// passes the zero State with live=false, Get reports false, Len, Delete and
// Snapshot ignore it). That is what makes results independent of when the
// sweeper happens to reclaim the entry.
//
// Val is the value part (nil or empty: none; CL and TB keys have none and
// cost no byte for it). In a State that the Store hands out (Update's cur,
// Snapshot.Range) Val aliases the Store's memory and is valid only during
// the callback; a State given to the Store (Update's next, Put) is copied,
// Val included. A Kind is at most MaxKind.
type State struct {
	Kind   Kind
	Expire int64 // Unix ns at which the key becomes equivalent to fresh
	A, B   int64 // family-specific
	Val    []byte
	// Mark is the key's change marker: the stamp (Store.SetStamp, the
	// raft index of the entry being applied) of the last write that
	// changed the key, its deletion included. The store sets it on every
	// write; Update and Put ignore what the caller gives, and Update's
	// callback is handed 0. Only Load (the restore path) stores a given
	// one. WATCH compares it (fsm).
	Mark uint64
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

// Equal reports whether two states are the same, values compared by content
// (nil and empty are the same: no value). The change marker is not part of
// the state a family sees, and is not compared.
func (st State) Equal(o State) bool {
	return st.Kind == o.Kind && st.Expire == o.Expire && st.A == o.A && st.B == o.B &&
		string(st.Val) == string(o.Val)
}
