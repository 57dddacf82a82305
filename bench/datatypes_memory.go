package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The datatypes mode's memory rows: bytes per key of a rate limiter's key
// as the native commands leave it, Redcell against Redis not durable, each
// on a fresh server, measured as the memory mode measures its families:
// ΔRSS ÷ keys (see memory.go and bench/DESIGN.md for why RSS).

// dtMemShape is one kind of key the memory rows load.
type dtMemShape struct {
	name string
	// commands appends the commands that make key i; replies are what
	// each must answer, exactly.
	commands func(buf []byte, key []byte, i int) []byte
	replies  []int64
	// target: Redcell's bytes/key at most target × Redis's.
	target float64
}

// memTTLSecs: loaded keys live an hour, so none expires while measured.
const memTTLSecs = 3600

// zsetMembers is the sorted set's size: a sliding log of limit 10, full.
const zsetMembers = 10

// zsetBaseMs is the first score of every loaded sorted set: a fixed
// instant of 2026 in ms, so that members have a real timestamp's length.
const zsetBaseMs = 1780000000000

var dtMemShapes = []dtMemShape{
	{name: "counter with a TTL (INCRBY + EXPIRE)", target: 1.0, replies: []int64{1, 1},
		commands: func(buf, key []byte, _ int) []byte {
			buf = appendCommand(buf, []byte("INCRBY"), key, []byte("1"))
			return appendCommand(buf, []byte("EXPIRE"), key, []byte(strconv.Itoa(memTTLSecs)))
		}},
	{name: "sorted set of 10 members (ZADD + EXPIRE)", target: 1.5, replies: []int64{zsetMembers, 1},
		commands: func(buf, key []byte, _ int) []byte {
			return appendCommand(zaddSlidingLog(buf, key), []byte("EXPIRE"), key, []byte(strconv.Itoa(memTTLSecs)))
		}},
}

// zaddSlidingLog appends one ZADD of zsetMembers members as a sliding log
// holds them: score the hit's ms, member "<ms>-<n>".
func zaddSlidingLog(buf, key []byte) []byte {
	buf = appendArrayHeader(buf, 2+2*zsetMembers)
	buf = appendBulkString(buf, "ZADD")
	buf = appendBulk(buf, key)
	var tmp [32]byte
	for j := range zsetMembers {
		ms := int64(zsetBaseMs + j*1000)
		buf = appendBulkInt(buf, ms)
		m := strconv.AppendInt(tmp[:0], ms, 10)
		m = append(m, '-')
		m = strconv.AppendInt(m, int64(j), 10)
		buf = appendBulk(buf, m)
	}
	return buf
}

// appendCommand appends one RESP command of bulk strings.
func appendCommand(buf []byte, args ...[]byte) []byte {
	buf = appendArrayHeader(buf, len(args))
	for _, a := range args {
		buf = appendBulk(buf, a)
	}
	return buf
}

// dtMemResult is one memory row.
type dtMemResult struct {
	shape       int // index in dtMemShapes
	kind        serverKind
	keys        int
	unavailable string
	rssEmpty    int64
	rssLoaded   int64
	loadTook    time.Duration
	dbsize      string
}

func (r dtMemResult) bytesPerKey() float64 {
	return float64(r.rssLoaded-r.rssEmpty) / float64(r.keys)
}

// runDatatypesMemory loads keys keys of each shape into a fresh server of
// each kind in turn (Redis-fsync skipped: the same keyspace as Redis),
// reading RSS before and after.
func runDatatypesMemory(ctx context.Context, f *fleet, kinds []serverKind, keys, conns int, progress io.Writer) ([]dtMemResult, error) {
	var out []dtMemResult
	for si, shape := range dtMemShapes {
		for _, k := range kinds {
			if k == kindRedisLuaFsync {
				continue
			}
			s, err := f.start(ctx, k)
			if err != nil {
				return nil, err
			}
			r, err := measureDTMemory(ctx, s, si, keys, conns)
			if stopErr := f.stop(s); err == nil {
				err = stopErr
			}
			if err != nil {
				return nil, fmt.Errorf("memory of %s on %s: %w", shape.name, k, err)
			}
			if r.unavailable != "" {
				fmt.Fprintf(progress, "  %-42s %-16s not available: %s\n", shape.name, dtServerName(k), r.unavailable)
			} else {
				fmt.Fprintf(progress, "  %-42s %-16s empty %s, %d keys in %.1f s -> %s (%.0f B/key, DBSIZE %s)\n",
					shape.name, dtServerName(k), formatBytes(r.rssEmpty), keys, r.loadTook.Seconds(), formatBytes(r.rssLoaded), r.bytesPerKey(), r.dbsize)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// measureDTMemory is one row on a fresh server s: the shape's commands on
// a check key first (an unknown command makes the row "not available"),
// then RSS, the load, RSS.
func measureDTMemory(ctx context.Context, s *server, si, keys, conns int) (dtMemResult, error) {
	shape := dtMemShapes[si]
	r := dtMemResult{shape: si, kind: s.kind, keys: keys}
	check := func(c *memConn) error {
		return c.roundTrip(shape.commands(nil, []byte("dt:check"), 0), shape.replies)
	}
	c, err := dialMemConn(ctx, s.addr())
	if err != nil {
		return r, err
	}
	err = check(c)
	c.Close()
	if err != nil {
		if isUnknownCommand(err) {
			r.unavailable = unavailableReason(err)
			return r, nil
		}
		return r, fmt.Errorf("check: %w", err)
	}
	if r.rssEmpty, err = rssBytes(s.pid()); err != nil {
		return r, err
	}
	start := time.Now()
	if err := loadDTKeys(ctx, s.addr(), shape, keys, conns); err != nil {
		return r, err
	}
	r.loadTook = time.Since(start)
	if r.rssLoaded, err = rssBytes(s.pid()); err != nil {
		return r, err
	}
	r.dbsize = dbsize(ctx, s)
	return r, nil
}

// loadDTKeys writes keys keys user:0 … of shape over conns connections,
// connection w taking i ≡ w (mod conns), 1,000 keys per pipeline, checking
// every reply. Goroutines: one per connection, waited for here.
func loadDTKeys(ctx context.Context, addr string, shape dtMemShape, keys, conns int) error {
	const batch = 1000
	var wg sync.WaitGroup
	errs := make([]error, conns)
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dialMemConn(ctx, addr)
			if err != nil {
				errs[w] = err
				return
			}
			defer c.Close()
			var buf, key []byte
			for i := w; i < keys; {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				buf = buf[:0]
				n := 0
				for ; n < batch && i < keys; n, i = n+1, i+conns {
					key = strconv.AppendInt(append(key[:0], "user:"...), int64(i), 10)
					buf = shape.commands(buf, key, i)
				}
				want := make([]int64, 0, n*len(shape.replies))
				for range n {
					want = append(want, shape.replies...)
				}
				if err := c.roundTrip(buf, want); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// memConn is a loader connection: raw pipelines out, integer replies in.
type memConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialMemConn(ctx context.Context, addr string) (*memConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &memConn{conn: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

func (c *memConn) Close() error { return c.conn.Close() }

// roundTrip writes pipeline and reads one integer reply per element of
// want, each of which must equal it. Every reply is read even after a
// mismatch, so that an error reply (an unknown command) is the one
// reported when there is one.
func (c *memConn) roundTrip(pipeline []byte, want []int64) error {
	c.conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.conn.Write(pipeline); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	var first error
	for i, w := range want {
		v, err := readIntReply(c.r)
		var re *replyError
		if err != nil && !errors.As(err, &re) {
			return err
		}
		if first == nil {
			if err != nil {
				first = err
			} else if v != w {
				first = fmt.Errorf("reply %d of the pipeline is %d, want %d", i, v, w)
			}
		}
	}
	return first
}

// datatypesMemoryMarkdown renders the memory rows with their targets.
func datatypesMemoryMarkdown(rs []dtMemResult, keys, conns int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Memory**: %d distinct keys `user:0..%d` per row, each row on a fresh server, loaded over %d connections in pipelines of 1,000 keys; bytes/key = ΔRSS ÷ keys, as the memory mode measures (RSS, not Redis's `used_memory`: it is what both processes hold from the system, allocator slack and Redcell's Go heap headroom included, read the same way for both). "+
		"Keys live an hour (`EXPIRE <key> %d`). The counter is `INCRBY <key> 1` + `EXPIRE`; the sorted set one `ZADD` of %d members scored in ms, member `<ms>-<n>` (a full sliding log of limit %d), + `EXPIRE`.\n\n",
		keys, keys-1, conns, memTTLSecs, zsetMembers, zsetMembers)
	b.WriteString("| key | server | RSS empty | RSS loaded | bytes/key | vs Redis | target | load time | DBSIZE |\n|---|---|---:|---:|---:|---:|---|---:|---:|\n")
	redisBPK := func(si int) float64 {
		for _, r := range rs {
			if r.shape == si && r.kind == kindRedisLua && r.unavailable == "" {
				return r.bytesPerKey()
			}
		}
		return 0
	}
	for _, r := range rs {
		shape := dtMemShapes[r.shape]
		if r.unavailable != "" {
			target := "-"
			if r.kind.isRedcell() {
				target = "not available"
			}
			fmt.Fprintf(&b, "| %s | %s | not available (`%s`) | | | | %s | | |\n", shape.name, dtServerName(r.kind), markdownCode(r.unavailable), target)
			continue
		}
		ratio, target := "-", "-"
		if base := redisBPK(r.shape); base > 0 && r.kind != kindRedisLua {
			got := r.bytesPerKey() / base
			ratio = formatRatio(got)
			if r.kind.isRedcell() {
				v := "**met**"
				if got > shape.target {
					v = "**not met**"
				}
				target = fmt.Sprintf("≤ %s Redis: %s", formatRatio(shape.target), v)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f | %s | %s | %.1f s | %s |\n", shape.name, dtServerName(r.kind), formatBytes(r.rssEmpty), formatBytes(r.rssLoaded),
			r.bytesPerKey(), ratio, target, r.loadTook.Seconds(), r.dbsize)
	}
	return b.String()
}
