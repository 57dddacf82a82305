package fsm

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slidinglog"
	"github.com/redcell/redcell/tokenbucket"
)

// opGen makes random but valid requests over a small key pool, so keys
// collide, limits are reached, refunds happen and DEL/FLUSHALL hit live keys.
type opGen struct {
	rng  *rand.Rand
	keys [][]byte
}

func newOpGen(seed uint64, nkeys int) *opGen {
	g := &opGen{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
	for i := 0; i < nkeys; i++ {
		k := []byte(fmt.Sprintf("key:%d", i))
		if i%7 == 0 {
			k = append(k, 0, '\r', '\n', 0xff) // binary-safe keys sort too
		}
		g.keys = append(g.keys, k)
	}
	return g
}

func (g *opGen) key() []byte { return g.keys[g.rng.IntN(len(g.keys))] }

func (g *opGen) params() gcra.Params {
	for {
		burst := g.rng.Int64N(12) - 1 // -1 .. 10
		count := 1 + g.rng.Int64N(10)
		period := 1 + g.rng.Int64N(5)
		q := int64(1)
		switch g.rng.IntN(10) {
		case 0:
			q = 0
		case 1:
			q = -g.rng.Int64N(4) // refunds, some answering the expire error
		case 2, 3:
			q = g.rng.Int64N(6)
		}
		if g.rng.IntN(50) == 0 {
			count = 3_000_000_000 // T = 0: never in the log, but NewParams says so
		}
		p, err := gcra.NewParams(burst, count, period, q)
		if err == nil {
			return p
		}
	}
}

// op makes a random request: mostly writes, and now and then a read, which
// an entry may carry too (MULTI/EXEC) and apply answers at the entry's now.
func (g *opGen) op() request.Request {
	switch r := g.rng.IntN(100); {
	case r < 46:
		return throttleReq(g.key(), g.params())
	case r < 62:
		return g.tbReq(request.TBTake)
	case r < 78:
		return g.slReq(request.SLHit)
	case r < 94:
		keys := make([][]byte, 1+g.rng.IntN(3))
		for i := range keys {
			keys[i] = g.key()
		}
		return request.Request{Code: request.Del, Keys: keys}
	case r < 95:
		return request.Request{Code: request.FlushAll}
	case r < 96:
		return peekReq(g.key(), g.params())
	case r < 97:
		if g.rng.IntN(2) == 0 {
			return g.tbReq(request.TBPeek)
		}
		return g.slReq(request.SLPeek)
	default:
		switch g.rng.IntN(5) {
		case 0:
			return request.Request{Code: request.Exists, Keys: [][]byte{g.key(), g.key()}}
		case 1:
			return request.Request{Code: request.PTTL, Key: g.key()}
		case 2:
			return request.Request{Code: request.TTL, Key: g.key()}
		case 3:
			return request.Request{Code: request.Type, Key: g.key()}
		}
		return request.Request{Code: request.DBSize}
	}
}

// expiryOp is one of the expiry commands with a random option and a time
// that may be in the past (deletion), near, far or at the ranges' ends.
func (g *opGen) expiryOp() request.Request {
	codes := []request.Code{request.Expire, request.PExpire, request.ExpireAt, request.PExpireAt,
		request.Persist, request.ExpireTime, request.PExpireTime}
	c := codes[g.rng.IntN(len(codes))]
	switch c {
	case request.Persist, request.ExpireTime, request.PExpireTime:
		return request.Request{Code: c, Key: g.key()}
	}
	var when int64
	switch g.rng.IntN(6) {
	case 0:
		when = -g.rng.Int64N(5000)
	case 1:
		when = math.MaxInt64 - g.rng.Int64N(2)
	default:
		when = g.rng.Int64N(30_000)
	}
	if c == request.ExpireAt || c == request.PExpireAt {
		when += 1_700_000_000_000 // ms, near the log's stamps
	}
	flags := []int64{0, 0, request.ExpireNX, request.ExpireXX, request.ExpireGT, request.ExpireLT,
		request.ExpireXX | request.ExpireGT, request.ExpireXX | request.ExpireLT}[g.rng.IntN(8)]
	r := request.Request{Code: c, Key: g.key()}
	r.SetArgs(when, flags)
	return r
}

// tbReq is a TB.TAKE or TB.PEEK with small random parameters (so buckets
// empty, refill and expire within the log), as commands builds it.
func (g *opGen) tbReq(code request.Code) request.Request {
	for {
		cost := int64(1)
		if g.rng.IntN(4) == 0 {
			cost = g.rng.Int64N(8) - 3 // refunds and COST 0 too
		}
		p, err := tokenbucket.NewParams(1+g.rng.Int64N(6), 1+g.rng.Int64N(3), 1+g.rng.Int64N(2000), cost, g.rng.IntN(2) == 0)
		if err != nil {
			continue
		}
		r := request.Request{Code: code, Key: g.key()}
		r.SetArgs(p.Capacity, p.RefillTokens, p.PeriodMs, p.Cost, int64(boolInt(p.Interval)))
		return r
	}
}

// slReq is an SL.HIT or SL.PEEK with small random parameters.
func (g *opGen) slReq(code request.Code) request.Request {
	for {
		window := 1 + g.rng.Int64N(2000)
		gap := int64(0)
		if g.rng.IntN(4) == 0 {
			gap = g.rng.Int64N(window/2 + 1)
		}
		denied := code == request.SLHit && g.rng.IntN(3) == 0
		p, err := slidinglog.NewParams(1+g.rng.Int64N(8), window, 1+g.rng.Int64N(3), gap, denied)
		if err != nil {
			continue
		}
		r := request.Request{Code: code, Key: g.key()}
		r.SetArgs(p.Limit, p.WindowMs, p.Cost, p.MinGapMs, int64(boolInt(p.DeniedCount)))
		return r
	}
}

// throttleReq is CL.THROTTLE on key with p, as commands builds it.
func throttleReq(key []byte, p gcra.Params) request.Request {
	r := request.Request{Code: request.Throttle, Key: key}
	r.SetArgs(p.Interval, p.Limit, p.Quantity)
	return r
}

// peekReq is CL.PEEK on key with p.
func peekReq(key []byte, p gcra.Params) request.Request {
	r := throttleReq(key, p)
	r.Code = request.Peek
	return r
}

// encodeEntry encodes requests into a fresh entry (a copy, safe to keep).
func encodeEntry(stamp int64, ops []request.Request) []byte {
	var e Encoder
	e.Reset(stamp)
	for i := range ops {
		e.Add(&ops[i])
	}
	return bytes.Clone(e.Finish())
}

func commandLog(index uint64, data []byte) *raft.Log {
	return &raft.Log{Type: raft.LogCommand, Index: index, Term: 1, Data: data}
}

// applyOne applies one command entry and returns a copy of its results,
// releasing the pooled buffer as the proposer does.
func applyOne(t testing.TB, f *FSM, l *raft.Log) []request.Result {
	t.Helper()
	out := f.ApplyBatch([]*raft.Log{l})
	return takeResults(t, f, out[0])
}

func takeResults(t testing.TB, f *FSM, v interface{}) []request.Result {
	t.Helper()
	res, ok := v.(*Results)
	if !ok {
		t.Fatalf("apply returned %T (%v), want *Results", v, v)
	}
	cp := append([]request.Result(nil), res.R...)
	f.Release(res)
	return cp
}

func snapshotBytes(t testing.TB, f *FSM) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f.WriteSnapshot(&b); err != nil {
		t.Fatalf("WriteSnapshot: %v", err)
	}
	return b.Bytes()
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

// persist takes a snapshot through raft's interface and returns its bytes.
func persist(t testing.TB, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("Persist left the sink closed=%v cancelled=%v", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

// allocatedBytes is the heap allocated while fn runs.
func allocatedBytes(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func quietFSM(stripes int) *FSM {
	return New(Config{Stripes: stripes, Logger: discardLogger()})
}

// stringOp is a random string command over the key pool, parsed as the
// command layer parses it: values that are integers, floats or not,
// expiry options near the log's stamps, NX/XX/GET, multi-key MSET and MGET.
func (g *opGen) stringOp() request.Request {
	k := string(g.key())
	val := []string{"1", "-7", "0.5", "abc", "9223372036854775807", ""}[g.rng.IntN(6)]
	var line []string
	switch g.rng.IntN(10) {
	case 0, 1:
		line = []string{"SET", k, val}
		switch g.rng.IntN(5) {
		case 0:
			line = append(line, "PX", strconv.Itoa(1+g.rng.IntN(20_000)))
		case 1:
			line = append(line, "EXAT", strconv.Itoa(1_700_000_000+g.rng.IntN(60)))
		case 2:
			line = append(line, "KEEPTTL")
		}
		line = append(line, [][]string{nil, {"NX"}, {"XX"}, {"GET"}, {"XX", "GET"}}[g.rng.IntN(5)]...)
	case 2:
		line = []string{"INCRBY", k, strconv.Itoa(g.rng.IntN(200) - 100)}
	case 3:
		line = []string{"APPEND", k, val}
	case 4:
		line = []string{"GETDEL", k}
	case 5:
		line = []string{"GETEX", k, "PX", strconv.Itoa(1 + g.rng.IntN(20_000))}
	case 6:
		line = []string{"MSET", k, val, string(g.key()), "2"}
	case 7:
		line = []string{"INCRBYFLOAT", k, "0.25"}
	case 8:
		line = []string{"MGET", k, string(g.key())}
	default:
		line = []string{"SETNX", k, val}
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
