package server

import (
	"testing"

	"github.com/redcell/redcell/request"
)

// TestStateMachineErrorTexts: every error the state machine answers for one
// op has its own text; an op it refused as invalid is not reported as a
// stopped state machine (that text tells operators to read the log for a
// node that is going down, while a refused op leaves the node running).
func TestStateMachineErrorTexts(t *testing.T) {
	for code, want := range map[request.ErrCode]string{
		request.ErrWrongType: "WRONGTYPE Operation against a key holding the wrong kind of value",
		request.ErrExpire:    "Cell error: Store error: Error while setting key expire",
		request.ErrInvalidOp: "ERR the state machine refused this request as invalid; nothing was changed",
	} {
		c := &conn{s: &Server{}}
		c.writeResult(&request.Result{Kind: request.KindError, Err: code})
		if got := string(c.w.B); got != "-"+want+"\r\n" {
			t.Errorf("ErrCode %d written as %q, want %q", code, got, "-"+want+"\r\n")
		}
		if c.s.stats.errors.Load() != 1 {
			t.Errorf("ErrCode %d: error counter %d, want 1", code, c.s.stats.errors.Load())
		}
	}
}

// TestCollectionReplies pins how each collection reply kind is written in
// both protocols, as Redis 7.0 writes the replies that use it: HGETALL a
// map, SMEMBERS a set, ZSCORE a double, ZRANGE … WITHSCORES pairs, LPOP key
// count of a missing key a nil array.
func TestCollectionReplies(t *testing.T) {
	items := func(s ...string) []byte {
		var d []byte
		for _, x := range s {
			d = request.AppendItem(d, []byte(x))
		}
		return d
	}
	cases := []struct {
		r            request.Result
		resp2, resp3 string
	}{
		{request.Result{Kind: request.KindArray, Data: items("a", "")}, "*2\r\n$1\r\na\r\n$0\r\n\r\n", "*2\r\n$1\r\na\r\n$0\r\n\r\n"},
		{request.Result{Kind: request.KindArray}, "*0\r\n", "*0\r\n"},
		{request.Result{Kind: request.KindMap, Data: items("f", "v")}, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", "%1\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{request.Result{Kind: request.KindSet, Data: items("m")}, "*1\r\n$1\r\nm\r\n", "~1\r\n$1\r\nm\r\n"},
		{request.Result{Kind: request.KindDouble, Data: []byte("0.10000000000000001")}, "$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"},
		{request.Result{Kind: request.KindDouble, Data: []byte("-inf")}, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{request.Result{Kind: request.KindScored, Data: items("a", "1", "b", "inf")},
			"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\ninf\r\n",
			"*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,inf\r\n"},
		{request.Result{Kind: request.KindInts, Data: request.AppendIntItem(request.AppendIntItem(nil, 1), -7)}, "*2\r\n:1\r\n:-7\r\n", "*2\r\n:1\r\n:-7\r\n"},
		{request.Result{Kind: request.KindNilArray}, "*-1\r\n", "_\r\n"},
		{request.Result{Kind: request.KindDoubles, Data: items("1.5", "0")}, "*2\r\n$3\r\n1.5\r\n$1\r\n0\r\n", "*2\r\n,1.5\r\n,0\r\n"},
		// A script's reply: RESP3 as is, RESP2 converted as Redis 7.0 does.
		{request.Result{Kind: request.KindReply, Data: []byte("*7\r\n%1\r\n+k\r\n:1\r\n~1\r\n$1\r\nm\r\n,3.5\r\n#t\r\n#f\r\n_\r\n(123\r\n")},
			"*7\r\n*2\r\n+k\r\n:1\r\n*1\r\n$1\r\nm\r\n$3\r\n3.5\r\n:1\r\n:0\r\n$-1\r\n$3\r\n123\r\n",
			"*7\r\n%1\r\n+k\r\n:1\r\n~1\r\n$1\r\nm\r\n,3.5\r\n#t\r\n#f\r\n_\r\n(123\r\n"},
		{request.Result{Kind: request.KindReply, Data: []byte("-ERR boom\r\n")}, "-ERR boom\r\n", "-ERR boom\r\n"},
	}
	for _, tc := range cases {
		for _, proto := range []int{2, 3} {
			c := &conn{s: &Server{}}
			c.w.Proto = proto
			c.writeResult(&tc.r)
			want := tc.resp2
			if proto == 3 {
				want = tc.resp3
			}
			if got := string(c.w.B); got != want {
				t.Errorf("kind %d RESP%d: %q, want %q", tc.r.Kind, proto, got, want)
			}
		}
	}
}
