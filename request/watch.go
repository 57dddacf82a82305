package request

import "encoding/binary"

// WatchedKey is one key of a WatchGuard: what WATCH's WatchMark read when
// the key was first watched.
type WatchedKey struct {
	Key  []byte
	Live bool   // live at WATCH
	W    uint64 // the applied index WATCH read
	TW   int64  // the replicated clock WATCH read
}

// NewWatchGuard builds the WatchGuard of a transaction of n requests that
// follows it in its batch: each watched key followed by its item
// (AppendWatchedItem), and as Args the term WATCH read and n. The keys are
// aliased, the items allocated in one buffer.
func NewWatchGuard(keys []WatchedKey, term uint64, n int) Request {
	r := Request{Code: WatchGuard, Keys: make([][]byte, 0, 2*len(keys))}
	buf := make([]byte, 0, len(keys)*(1+2*binary.MaxVarintLen64))
	for _, k := range keys {
		at := len(buf)
		buf = AppendWatchedItem(buf, k)
		r.Keys = append(r.Keys, k.Key, buf[at:len(buf):len(buf)])
	}
	r.SetArgs(int64(term), int64(n))
	return r
}

// AppendWatchedItem appends the item a WatchGuard carries after a key: a
// byte 1 when it was live (else 0), uvarint W, varint TW.
func AppendWatchedItem(b []byte, k WatchedKey) []byte {
	live := byte(0)
	if k.Live {
		live = 1
	}
	b = append(b, live)
	b = binary.AppendUvarint(b, k.W)
	return binary.AppendVarint(b, k.TW)
}

// WatchedItem reads an item of AppendWatchedItem; ok is false unless it is
// exactly one.
func WatchedItem(item []byte) (live bool, w uint64, tw int64, ok bool) {
	if len(item) < 3 || item[0] > 1 {
		return false, 0, 0, false
	}
	w, n := binary.Uvarint(item[1:])
	if n <= 0 {
		return false, 0, 0, false
	}
	tw, m := binary.Varint(item[1+n:])
	if m <= 0 || 1+n+m != len(item) {
		return false, 0, 0, false
	}
	return item[0] == 1, w, tw, true
}
