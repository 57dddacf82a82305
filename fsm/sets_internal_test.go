package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// setOp is a random set command over the key pool, parsed as the command
// layer parses it: members from a small pool (so SADD meets present
// members and SREM empties sets), repeats included.
func (g *opGen) setOp() request.Request {
	members := []string{"a", "b", "", "member-long-enough", "\x00\xff"}
	line := []string{[]string{"SADD", "SADD", "SREM", "SISMEMBER", "SMISMEMBER", "SCARD", "SMEMBERS"}[g.rng.IntN(7)], string(g.key())}
	switch line[0] {
	case "SISMEMBER":
		line = append(line, members[g.rng.IntN(len(members))])
	case "SADD", "SREM", "SMISMEMBER":
		for n := 1 + g.rng.IntN(4); n > 0; n-- {
			line = append(line, members[g.rng.IntN(len(members))])
		}
	}
	var scratch []byte
	args := make([][]byte, len(line))
	for i, a := range line {
		args[i] = []byte(a)
	}
	r, text := commands.Lookup(args[0], &scratch).Parse(args)
	if text != "" {
		panic(fmt.Sprintf("%q: %s", line, text)) // a bug in this generator
	}
	return r
}

// setRecordValue encodes members (sorted, distinct) as apply stores them.
func setRecordValue(members ...string) []byte {
	size := 0
	for _, m := range members {
		size += len(m)
	}
	return appendSet(nil, len(members), size, func(emit func([]byte)) {
		for _, m := range members {
			emit([]byte(m))
		}
	})
}

// TestSetRecordCheck: restore takes a set record apply could write and
// refuses every other one, leaving the state as it was.
func TestSetRecordCheck(t *testing.T) {
	good := setRecordValue("", "a", "bc")
	if want := []byte{1, 0, 1, 'a', 'b', 'c'}; !bytes.Equal(good, want) {
		t.Fatalf("encoding of {\"\", a, bc}: %v, want %v", good, want)
	}
	long := bytes.Repeat([]byte("x"), 300)
	wide := setRecordValue("a", string(long))
	if wide[0] != 2 || len(wide) != 1+2+301 {
		t.Fatalf("a 301-byte set: width %d, %d bytes", wide[0], len(wide))
	}
	rec := func(a int64, val []byte) streamRecord {
		return streamRecord{key: []byte("s"), st: shard.State{Kind: setKind, Expire: noExpiry, A: a, Val: val}}
	}
	for _, tt := range []struct {
		what string
		rec  streamRecord
		ok   bool
	}{
		{"a set", rec(3, good), true},
		{"a one-member set", rec(1, setRecordValue("x")), true},
		{"a wide set", rec(2, wide), true},
		{"no value", rec(1, nil), false},
		{"a count of 0", rec(0, []byte{1}), false},
		{"a count above the value", rec(4, good), false},
		{"members out of order", rec(2, []byte{1, 1, 'b', 'a'}), false},
		{"a repeated member", rec(2, []byte{1, 1, 'a', 'a'}), false},
		{"an offset past the end", rec(2, []byte{1, 3, 'a', 'b'}), false},
		{"decreasing offsets", rec(3, []byte{1, 2, 1, 'a', 'b', 'c'}), false},
		{"a width of 3", rec(1, []byte{3, 'a'}), false},
		{"a wider width than needed", rec(2, []byte{2, 1, 0, 'a', 'b'}), false},
		{"an expiry field without a far expiry", streamRecord{key: []byte("s"), st: shard.State{Kind: setKind, Expire: 5e18, A: 1, B: 7, Val: setRecordValue("x")}}, false},
	} {
		f := quietFSM(2)
		err := f.Restore(io.NopCloser(bytes.NewReader(encodeStream(5, []streamRecord{tt.rec}))))
		if (err == nil) != tt.ok {
			t.Errorf("%s: restore error %v", tt.what, err)
		}
	}
}

// TestSetReadsDoNotAllocate: SISMEMBER and SCARD allocate nothing in
// steady state; SMISMEMBER only its reply.
func TestSetReadsDoNotAllocate(t *testing.T) {
	f := quietFSM(1)
	add := request.Request{Code: request.SAdd, Key: []byte("s"), Keys: [][]byte{[]byte("a"), []byte("b"), []byte("c")}}
	applyOne(t, f, commandLog(1, encodeEntry(1_700_000_000_000_000_000, []request.Request{add})))
	now := int64(1_700_000_000_000_000_000)
	is := request.Request{Code: request.SIsMember, Key: []byte("s"), Keys: [][]byte{[]byte("b")}}
	card := request.Request{Code: request.SCard, Key: []byte("s")}
	var res request.Result
	f.Read(&is, now, &res) // warm the buffer pool
	if n := testing.AllocsPerRun(100, func() {
		f.Read(&is, now, &res)
		f.Read(&card, now, &res)
	}); n != 0 {
		t.Errorf("SISMEMBER and SCARD allocate %v times", n)
	}
}

// BenchmarkSetIsMember: SISMEMBER on sets of n 16-byte members (a binary
// search over the offsets, the value read into a pooled buffer).
func BenchmarkSetIsMember(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			f := quietFSM(1)
			now := int64(1_700_000_000_000_000_000)
			add := request.Request{Code: request.SAdd, Key: []byte("s")}
			for i := 0; i < n; i++ {
				add.Keys = append(add.Keys, []byte(fmt.Sprintf("member-%09d", i)))
			}
			applyOne(b, f, commandLog(1, encodeEntry(now, []request.Request{add})))
			is := request.Request{Code: request.SIsMember, Key: []byte("s"), Keys: [][]byte{[]byte(fmt.Sprintf("member-%09d", n/3))}}
			var res request.Result
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				f.Read(&is, now, &res)
			}
			if res.Ints[0] != 1 {
				b.Fatalf("SISMEMBER: %+v", res)
			}
		})
	}
}

// BenchmarkSetAdd: SADD of one new member to a 10-member set and SREM of
// it again, each its own log entry (the whole value rewritten each time).
func BenchmarkSetAdd(b *testing.B) {
	f := quietFSM(1)
	now := int64(1_700_000_000_000_000_000)
	add := request.Request{Code: request.SAdd, Key: []byte("s")}
	for i := 0; i < 10; i++ {
		add.Keys = append(add.Keys, []byte(fmt.Sprintf("member-%09d", i)))
	}
	applyOne(b, f, commandLog(1, encodeEntry(now, []request.Request{add})))
	one := [][]byte{[]byte("member-new")}
	addLog := commandLog(2, encodeEntry(now, []request.Request{{Code: request.SAdd, Key: []byte("s"), Keys: one}}))
	remLog := commandLog(3, encodeEntry(now, []request.Request{{Code: request.SRem, Key: []byte("s"), Keys: one}}))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		addLog.Index, remLog.Index = uint64(2*i+2), uint64(2*i+3)
		f.Release(f.ApplyBatch([]*raft.Log{addLog})[0].(*Results))
		f.Release(f.ApplyBatch([]*raft.Log{remLog})[0].(*Results))
	}
}
