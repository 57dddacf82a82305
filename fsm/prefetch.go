package fsm

import (
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// lookahead feeds the keyspace's Prefetcher the keys of an entry's requests
// shard.Lead requests ahead of the one being applied, so that the two
// cache lines each decision needs are on their way before it looks its key
// up (shard/prefetch.go says why and what it saves). It decodes the entry a
// second time, which costs less than one of the misses it hides.
//
// Owned by the FSM goroutine, like the store it reads without locks.
type lookahead struct {
	dec  Decoder
	req  request.Request
	pf   shard.Prefetcher
	more bool // dec has requests left
}

// start begins an entry whose Decoder d has just been Reset on data: it
// feeds the first shard.Lead keys. Entries of the first format (version 1)
// are applied without prefetching.
func (la *lookahead) start(store *shard.Store, data []byte, version byte) {
	la.pf.Reset(store)
	la.more = version == EntryVersion && la.dec.Reset(data) == nil
	for range shard.Lead {
		la.next()
	}
}

// next feeds the key of the next request ahead (or a gap once the entry
// has no more, so the last records are still fetched). Call it once per
// request applied.
func (la *lookahead) next() {
	var key []byte
	if la.more {
		ok, err := la.dec.Next(&la.req)
		switch {
		case err != nil || !ok:
			la.more = false // the applying decoder reports any error
		case la.req.Code.LooksUpKey():
			key = la.req.Key
		}
	}
	la.pf.Feed(key)
}

// stop drops the references into the entry.
func (la *lookahead) stop() {
	la.req = request.Request{}
	la.more = false
}
