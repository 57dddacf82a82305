package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// hashOp is a random hash command over the key pool, parsed as the command
// layer parses it: fields that collide, values that are integers, floats
// or not, multi-field HSET, HDEL and HMGET, and the reads.
func (g *opGen) hashOp() request.Request {
	k := string(g.key())
	field := func() string { return []string{"f", "g", "tokens", "ts"}[g.rng.IntN(4)] }
	val := []string{"1", "-7", "0.5", "abc", "9223372036854775807", "10"}[g.rng.IntN(6)]
	var line []string
	switch g.rng.IntN(10) {
	case 0, 1:
		line = []string{"HSET", k, field(), val}
		if g.rng.IntN(2) == 0 {
			line = append(line, field(), val)
		}
	case 2:
		line = []string{"HINCRBY", k, field(), strconv.Itoa(g.rng.IntN(200) - 100)}
	case 3:
		line = []string{"HINCRBYFLOAT", k, field(), []string{"0.25", "-1.5", "x", "inf"}[g.rng.IntN(4)]}
	case 4:
		line = []string{"HDEL", k, field(), field()}
	case 5:
		line = []string{"HSETNX", k, field(), val}
	case 6:
		line = []string{"HMGET", k, field(), field()}
	case 7:
		line = []string{"HGETALL", k}
	case 8:
		line = []string{"HMSET", k, field(), val}
	default:
		line = []string{[]string{"HLEN", "HKEYS", "HVALS"}[g.rng.IntN(3)], k}
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

// pairs encodes field/value pairs as a hash's value.
func pairs(kv ...string) []byte {
	var v []byte
	for i := 0; i+1 < len(kv); i += 2 {
		v = appendPair(v, []byte(kv[i]), []byte(kv[i+1]))
	}
	return v
}

// TestRestoreRefusesCorruptHashes: a hash record apply could never have
// written (malformed pairs, a field twice, a count that is not the number
// of fields, an empty hash, an expiry B cannot hold) is refused at restore,
// so that no value can fail to decode at apply; a well-formed one restores.
func TestRestoreRefusesCorruptHashes(t *testing.T) {
	good := shard.State{Kind: hashKind, Expire: noExpiry, A: 2, Val: pairs("a", "1", "b", "")}
	for name, st := range map[string]shard.State{
		"truncated pair":    {Kind: hashKind, Expire: noExpiry, A: 1, Val: pairs("a", "1")[:3]},
		"field without val": {Kind: hashKind, Expire: noExpiry, A: 1, Val: []byte{1, 'a'}},
		"length past end":   {Kind: hashKind, Expire: noExpiry, A: 1, Val: []byte{1, 'a', 9, 'x'}},
		"field twice":       {Kind: hashKind, Expire: noExpiry, A: 2, Val: pairs("a", "1", "a", "2")},
		"count too high":    {Kind: hashKind, Expire: noExpiry, A: 3, Val: good.Val},
		"count too low":     {Kind: hashKind, Expire: noExpiry, A: 1, Val: good.Val},
		"negative count":    {Kind: hashKind, Expire: noExpiry, A: -2, Val: good.Val},
		"empty hash":        {Kind: hashKind, Expire: noExpiry, A: 0},
		"small B":           {Kind: hashKind, Expire: noExpiry, A: 2, B: 5, Val: good.Val},
		"B with an Expire":  {Kind: hashKind, Expire: 1e18, A: 2, B: math.MaxInt64, Val: good.Val},
	} {
		f := quietFSM(2)
		stream := encodeStream(1, []streamRecord{{key: []byte("h"), st: st}})
		if err := f.Restore(io.NopCloser(bytes.NewReader(stream))); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
	f := quietFSM(2)
	stream := encodeStream(1, []streamRecord{{key: []byte("h"), st: good}})
	if err := f.Restore(io.NopCloser(bytes.NewReader(stream))); err != nil {
		t.Fatalf("a well-formed hash: %v", err)
	}
	if got := persist(t, f); !bytes.Equal(got, stream) {
		t.Errorf("a restored hash snapshots differently")
	}
}

// TestHashScratchPathsAgree: the map a write builds for many lookups and
// the linear scan change a hash alike, whatever the order of sets and
// deletes (a field set again after its deletion goes to the end, as in
// Redis's listpack).
func TestHashScratchPathsAgree(t *testing.T) {
	g := newOpGen(3, 1)
	for round := 0; round < 200; round++ {
		var val []byte
		for i := 0; i < g.rng.IntN(40); i++ {
			val = appendPair(val, []byte("f"+strconv.Itoa(i)), []byte(strings.Repeat("v", g.rng.IntN(3))))
		}
		type edit struct {
			set   bool
			field string
		}
		edits := make([]edit, 1+g.rng.IntN(60))
		for i := range edits {
			edits[i] = edit{g.rng.IntN(3) > 0, "f" + strconv.Itoa(g.rng.IntN(60))}
		}
		var out [2][]byte
		var counts [2][2]int
		for path, lookups := range []int{1, indexAbove + 1} {
			var h hashScratch
			h.load(val, lookups)
			if (h.index != nil) != (path == 1 && len(h.entries) > 0) {
				t.Fatalf("path %d with %d entries: index %v", path, len(h.entries), h.index != nil)
			}
			for _, e := range edits {
				if e.set {
					if h.set([]byte(e.field), []byte(e.field+"!")) {
						counts[path][0]++
					}
				} else if h.del([]byte(e.field)) {
					counts[path][1]++
				}
			}
			out[path] = bytes.Clone(h.encode())
			if h.size != len(out[path]) {
				t.Fatalf("path %d: size %d, encoding %d bytes", path, h.size, len(out[path]))
			}
			n := 0
			eachPair(out[path], func(_, _ []byte) { n++ })
			if n != h.live {
				t.Fatalf("path %d: %d live, %d encoded", path, h.live, n)
			}
		}
		if !bytes.Equal(out[0], out[1]) || counts[0] != counts[1] {
			t.Fatalf("round %d: the scan and the map disagree:\n%q\n%q", round, out[0], out[1])
		}
	}
}

// TestHashReadsAllocateOnlyTheReply: HGET, HEXISTS, HLEN and HMGET of a
// hash copy it into a pooled buffer, so a read allocates its reply and no
// more.
func TestHashReadsAllocateOnlyTheReply(t *testing.T) {
	f := quietFSM(2)
	now := int64(1_700_000_000_000_000_000)
	set := request.Request{Code: request.HSet, Key: []byte("h"), Keys: [][]byte{[]byte("tokens"), []byte("10"), []byte("ts"), []byte("1000")}}
	set.SetArgs(0)
	applyOne(t, f, commandLog(1, encodeEntry(now, []request.Request{set})))
	for _, r := range []request.Request{
		{Code: request.HGet, Key: []byte("h"), Keys: [][]byte{[]byte("ts")}},
		{Code: request.HExists, Key: []byte("h"), Keys: [][]byte{[]byte("ts")}},
		{Code: request.HLen, Key: []byte("h")},
		{Code: request.HMGet, Key: []byte("h"), Keys: [][]byte{[]byte("tokens"), []byte("ts")}},
	} {
		var res request.Result
		f.Read(&r, now, &res) // warm the pool
		if res.Kind == request.KindError {
			t.Fatalf("code %d: error %d", r.Code, res.Err)
		}
		want := 0.0
		if r.Code == request.HGet || r.Code == request.HMGet {
			want = 1 // the reply's bytes
		}
		if n := testing.AllocsPerRun(100, func() { f.Read(&r, now, &res) }); n > want {
			t.Errorf("code %d: %v allocations per read, want %v", r.Code, n, want)
		}
	}
}

// BenchmarkHashMemoryPerKey: the heap a token-bucket hash costs per key
// (HSET rl:user:%010d tokens 10 ts 1700000000000, 1M keys, 64 stripes),
// to set beside Redis's used_memory for the same keys (fsm/DESIGN.md).
func BenchmarkHashMemoryPerKey(b *testing.B) {
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f := quietFSM(64)
		const n, batch = 1_000_000, 1000
		now := int64(1_700_000_000_000_000_000)
		reqs := make([]request.Request, batch)
		keys := make([][]byte, batch)
		for i := 0; i < n; i += batch {
			for j := range reqs {
				keys[j] = fmt.Appendf(keys[j][:0], "rl:user:%010d", i+j)
				reqs[j] = request.Request{Code: request.HSet, Key: keys[j],
					Keys: [][]byte{[]byte("tokens"), []byte("10"), []byte("ts"), []byte("1700000000000")}}
				reqs[j].SetArgs(0)
			}
			applyOne(b, f, commandLog(uint64(i/batch+1), encodeEntry(now, reqs)))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/key")
		runtime.KeepAlive(f)
	}
}

// BenchmarkApplyHashIncrBy: HINCRBY of a token bucket's field (a two-field
// hash among 10k), 100 requests an entry: the decode, rewrite and store of
// a small hash per request.
func BenchmarkApplyHashIncrBy(b *testing.B) {
	f := quietFSM(8)
	now := int64(1_700_000_000_000_000_000)
	const keys, batch = 10_000, 100
	reqs := make([]request.Request, batch)
	for i := 0; i < keys; i += batch {
		for j := range reqs {
			reqs[j] = request.Request{Code: request.HSet, Key: fmt.Appendf(nil, "rl:%d", i+j),
				Keys: [][]byte{[]byte("tokens"), []byte("10"), []byte("ts"), []byte("1700000000000")}}
			reqs[j].SetArgs(0)
		}
		applyOne(b, f, commandLog(uint64(i/batch+1), encodeEntry(now, reqs)))
	}
	for j := range reqs {
		reqs[j] = request.Request{Code: request.HIncrBy, Key: fmt.Appendf(nil, "rl:%d", j*97%keys), Keys: [][]byte{[]byte("tokens")}}
		reqs[j].SetArgs(-1)
	}
	log := commandLog(1_000_000, encodeEntry(now, reqs))
	b.ResetTimer()
	for i := range b.N {
		log.Index = uint64(1_000_000 + i)
		applyOne(b, f, log)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/request")
}
