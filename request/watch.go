package request

// flagBytes are the liveness flags a WatchGuard carries after each key.
var flagBytes = [2][]byte{{0}, {1}}

// NewWatchGuard builds the WatchGuard of a transaction of n requests that
// follows it in its batch: the watched keys, each with its byte of live
// (1: live at WATCH), and what WATCH's WatchMark read (the applied index w,
// the term of the last applied entry, the replicated clock tw). keys are
// aliased, not copied.
func NewWatchGuard(keys [][]byte, live []bool, w, term uint64, tw int64, n int) Request {
	r := Request{Code: WatchGuard, Keys: make([][]byte, 0, 2*len(keys))}
	for i, k := range keys {
		f := flagBytes[0]
		if live[i] {
			f = flagBytes[1]
		}
		r.Keys = append(r.Keys, k, f)
	}
	r.SetArgs(int64(w), int64(term), tw, int64(n))
	return r
}
