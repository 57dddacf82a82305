package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// memoryOptions sizes the memory mode.
type memoryOptions struct {
	keys      int           // distinct long-lived keys loaded
	churnFor  time.Duration // how long short-lived keys keep arriving
	churnRate int           // new short-lived keys per second
	conns     int           // loader connections
}

// Parameters of the two key populations. Loaded keys live an hour (1 per
// 3600 s, one request: TTL 3600 s) so none expires during the measurement;
// churn keys live one second (1 per 1 s) so they expire continuously.
var (
	memoryKeyArgs = []string{"15", "1", "3600", "1"}
	churnKeyArgs  = []string{"0", "1", "1", "1"}
)

// rssSample is the server's RSS at a moment of the churn phase.
type rssSample struct {
	at       time.Duration // since the churn began
	rss      int64
	inserted int64 // churn keys written so far
	keys     int64 // DBSIZE, or -1 when the server does not answer it
}

// memoryResult is what the memory mode measured on one server.
type memoryResult struct {
	kind      serverKind
	keys      int
	rssEmpty  int64
	rssLoaded int64
	loadTook  time.Duration
	dbsize    string // DBSIZE after the load, or why it is unknown
	churn     []rssSample
}

// bytesPerKey is the RSS growth per loaded key.
func (r memoryResult) bytesPerKey() float64 {
	return float64(r.rssLoaded-r.rssEmpty) / float64(r.keys)
}

// runMemory measures each server in turn on a fresh instance: RSS empty,
// RSS after loading opts.keys distinct keys, then RSS once a second while
// short-lived keys keep arriving. Servers run one at a time so that they do
// not compete for memory bandwidth or CPU. Redis-Lua-fsync is skipped: it
// holds the same keyspace as Redis-Lua, and its loader would only measure
// fsync speed.
func runMemory(ctx context.Context, f *fleet, kinds []serverKind, opts memoryOptions, progress io.Writer) ([]memoryResult, error) {
	var results []memoryResult
	for _, k := range kinds {
		if k == kindRedisLuaFsync {
			continue
		}
		s, err := f.start(ctx, k)
		if err != nil {
			return nil, err
		}
		if err := checkThrottle(ctx, s); err != nil {
			return nil, err
		}
		r, err := measureMemory(ctx, s, opts, progress)
		if stopErr := f.stop(s); err == nil {
			err = stopErr
		}
		if err != nil {
			return nil, fmt.Errorf("memory on %s: %w", k, err)
		}
		results = append(results, r)
	}
	return results, nil
}

func measureMemory(ctx context.Context, s *server, opts memoryOptions, progress io.Writer) (memoryResult, error) {
	r := memoryResult{kind: s.kind, keys: opts.keys}
	var err error
	if r.rssEmpty, err = rssBytes(s.pid()); err != nil {
		return r, err
	}
	start := time.Now()
	var written atomic.Int64
	err = pipelineLoad(ctx, s, opts.conns, 0, &written, func(i int64) (string, bool) {
		return "user:" + strconv.FormatInt(i, 10), i < int64(opts.keys)
	}, memoryKeyArgs)
	if err != nil {
		return r, fmt.Errorf("load %d keys: %w", opts.keys, err)
	}
	r.loadTook = time.Since(start)
	if r.rssLoaded, err = rssBytes(s.pid()); err != nil {
		return r, err
	}
	r.dbsize = dbsize(ctx, s)
	fmt.Fprintf(progress, "  %-16s empty %s, %d keys in %.1f s -> %s (%.0f B/key, DBSIZE %s)\n",
		s.kind, formatBytes(r.rssEmpty), opts.keys, r.loadTook.Seconds(), formatBytes(r.rssLoaded), r.bytesPerKey(), r.dbsize)

	// Churn: keys with a one-second life arrive at a fixed rate; sample RSS.
	churnCtx, cancel := context.WithTimeout(ctx, opts.churnFor)
	defer cancel()
	var inserted atomic.Int64
	loadErr := make(chan error, 1)
	go func() {
		loadErr <- pipelineLoad(churnCtx, s, opts.conns, opts.churnRate, &inserted, func(i int64) (string, bool) {
			return "churn:" + strconv.FormatInt(i, 10), true
		}, churnKeyArgs)
	}()
	// DBSIZE alongside RSS tells expired keys that were not reclaimed from
	// memory that was not returned.
	keysConn, err := dialRESP(ctx, s.addr())
	if err != nil {
		return r, err
	}
	defer keysConn.Close()
	countKeys := func() int64 {
		keysConn.setDeadline(time.Now().Add(5 * time.Second))
		v, err := keysConn.do("DBSIZE")
		if err != nil || v.Kind != ':' {
			return -1
		}
		return v.Int
	}
	churnStart := time.Now()
	r.churn = append(r.churn, rssSample{rss: r.rssLoaded, keys: countKeys()})
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-churnCtx.Done():
			done = true
		}
		rss, err := rssBytes(s.pid())
		if err != nil {
			return r, err
		}
		r.churn = append(r.churn, rssSample{at: time.Since(churnStart), rss: rss, inserted: inserted.Load(), keys: countKeys()})
	}
	if err := <-loadErr; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return r, fmt.Errorf("churn: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	last := r.churn[len(r.churn)-1]
	fmt.Fprintf(progress, "  %-16s churn %d keys in %.0f s: RSS %s -> %s, DBSIZE %d -> %d\n",
		s.kind, last.inserted, last.at.Seconds(), formatBytes(r.churn[0].rss), formatBytes(last.rss), r.churn[0].keys, last.keys)
	return r, nil
}

// pipelineLoad writes CL.THROTTLE <key(i)> args for i = 0, 1, ... over conns
// connections, connection w taking i ≡ w (mod conns), in pipelined batches,
// until key reports false, ctx ends, or a reply is not an allowed decision
// (every key is new, so every decision must be allowed). rate > 0 paces the
// total to rate keys per second in 10 ms slices; rate 0 goes flat out.
// written counts acknowledged keys. It blocks until every connection is done.
func pipelineLoad(ctx context.Context, s *server, conns, rate int, written *atomic.Int64, key func(i int64) (string, bool), args []string) error {
	const slice = 10 * time.Millisecond
	batch := 1000
	if rate > 0 {
		batch = max(1, rate/conns/int(time.Second/slice))
	}
	var wg sync.WaitGroup
	errs := make([]error, conns)
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = loadOneConn(ctx, s, int64(w), int64(conns), batch, rate > 0, written, key, args)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loadOneConn is one connection's share of pipelineLoad.
func loadOneConn(ctx context.Context, s *server, first, stride int64, batch int, paced bool, written *atomic.Int64, key func(i int64) (string, bool), args []string) error {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return err
	}
	defer c.Close()
	var tick *time.Ticker
	if paced {
		tick = time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
	}
	i := first
	for {
		if tick != nil {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
		sent := 0
		for ; sent < batch; sent++ {
			k, ok := key(i)
			if !ok {
				break
			}
			c.send(s.throttleCommand(k, args...)...)
			i += stride
		}
		if sent == 0 {
			return nil
		}
		c.setDeadline(time.Now().Add(30 * time.Second))
		if err := c.flush(); err != nil {
			return err
		}
		for range sent {
			v, err := c.read()
			if err != nil {
				return err
			}
			reply, err := throttleReply(v)
			if err != nil {
				return err
			}
			if reply[0] != 0 {
				return fmt.Errorf("a new key was limited: %v", reply)
			}
		}
		written.Add(int64(sent))
	}
}

// dbsize asks the server how many keys it holds; Redcell may not implement
// DBSIZE, in which case the reply is reported as is.
func dbsize(ctx context.Context, s *server) string {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return "unknown"
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(5 * time.Second))
	v, err := c.do("DBSIZE")
	if err != nil || v.Kind != ':' {
		return "n/a"
	}
	return strconv.FormatInt(v.Int, 10)
}

// memoryMarkdown renders the memory results: one row per server, then the
// RSS series of the churn phase.
func memoryMarkdown(rs []memoryResult, opts memoryOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d distinct keys `user:0..%d` (CL.THROTTLE `<key> %s`, TTL 1 h) loaded over %d pipelined connections; bytes/key = ΔRSS / keys. Then %s of new keys `churn:N` (`<key> %s`, TTL 1 s) at %d keys/s on top.\n\n",
		opts.keys, opts.keys-1, strings.Join(memoryKeyArgs, " "), opts.conns, opts.churnFor, strings.Join(churnKeyArgs, " "), opts.churnRate)
	b.WriteString("| server | RSS empty | RSS loaded | bytes/key | load time | DBSIZE | churn RSS first → last (max) |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		maxRSS := int64(0)
		for _, s := range r.churn {
			maxRSS = max(maxRSS, s.rss)
		}
		first, last := r.churn[0], r.churn[len(r.churn)-1]
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.1f s | %s | %s → %s (%s) |\n",
			r.kind, formatBytes(r.rssEmpty), formatBytes(r.rssLoaded), r.bytesPerKey(), r.loadTook.Seconds(), r.dbsize,
			formatBytes(first.rss), formatBytes(last.rss), formatBytes(maxRSS))
	}
	b.WriteString("\nDuring churn, one sample per second, the first right after the load: RSS in MiB / DBSIZE in thousands of keys:\n\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "* %s:", r.kind)
		for _, s := range r.churn {
			if s.keys >= 0 {
				fmt.Fprintf(&b, " %.0f/%dk", float64(s.rss)/(1<<20), s.keys/1000)
			} else {
				fmt.Fprintf(&b, " %.0f", float64(s.rss)/(1<<20))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
