package fsm

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The lookahead's decoder stays exactly shard.Lead requests ahead of the
// one being applied, across requests without a key, and stops at the end.
func TestLookahead_StaysLeadAhead(t *testing.T) {
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []request.Request
	for i := range 30 {
		switch i % 5 {
		case 2:
			reqs = append(reqs, request.Request{Code: request.DBSize})
		case 4:
			reqs = append(reqs, request.Request{Code: request.Del, Keys: [][]byte{fmt.Appendf(nil, "d%d", i)}})
		default:
			reqs = append(reqs, throttleReq(fmt.Appendf(nil, "k%d", i), p))
		}
	}
	data := encodeEntry(1, reqs)
	var la lookahead
	la.start(shard.New(4), data, EntryVersion)
	for i := 0; i <= len(reqs); i++ {
		ahead := shard.Lead - 1 + i // the request the lookahead decoded last
		if ahead < len(reqs) {
			if !la.more || la.req.Code != reqs[ahead].Code || !bytes.Equal(la.req.Key, reqs[ahead].Key) {
				t.Fatalf("applying request %d: lookahead at %v %q (more %v), want request %d: %v %q",
					i, la.req.Code, la.req.Key, la.more, ahead, reqs[ahead].Code, reqs[ahead].Key)
			}
		} else if la.more && ahead > len(reqs) {
			t.Fatalf("applying request %d: lookahead still has requests past the end", i)
		}
		la.next()
	}
	la.stop()
	if la.more || la.req.Key != nil {
		t.Error("stop kept a reference into the entry")
	}

	// An entry of the first format is applied without prefetching.
	la.start(shard.New(4), data, entryVersion1)
	if la.more {
		t.Error("lookahead decodes a version 1 entry")
	}
}

// Applying with the lookahead answers exactly what each request answers
// alone, in entries longer and shorter than the lookahead, with requests
// of every kind, repeated keys among them.
func TestApplyWithLookahead_SameAnswersAsOneByOne(t *testing.T) {
	p, err := gcra.NewParams(2, 3, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(i int) request.Request {
		key := fmt.Appendf(nil, "k%d", i%7)
		switch i % 4 {
		case 1:
			r := peekReq(key, p)
			return r
		case 3:
			return request.Request{Code: request.PTTL, Key: key}
		default:
			return throttleReq(key, p)
		}
	}
	for _, n := range []int{1, shard.Lead - 1, shard.Lead, shard.Lead + 1, 50} {
		batched, alone := quietFSM(4), quietFSM(4)
		reqs := make([]request.Request, n)
		for i := range reqs {
			reqs[i] = mk(i)
		}
		got := applyOne(t, batched, commandLog(1, encodeEntry(1e18, reqs)))
		for i := range reqs {
			want := applyOne(t, alone, commandLog(uint64(i+1), encodeEntry(1e18, reqs[i:i+1])))
			if fmt.Sprint(got[i]) != fmt.Sprint(want[0]) {
				t.Fatalf("n=%d request %d: %v in one entry, %v alone", n, i, got[i], want[0])
			}
		}
	}
}
