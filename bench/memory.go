package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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
	families  []family      // limiter families loaded, each on a fresh server
	slHits    int           // hits per sliding-log key (at distinct instants)
}

// Parameters of the key populations. Loaded keys live an hour so none
// expires during the measurement: CL 1 per 3600 s (one request: TTL
// 3600 s), TB capacity 16 refilled one token an hour (one take: full again
// in an hour), SL limit 10 in an hour's window. Churn keys (CL) live one
// second (1 per 1 s) so they expire continuously.
var (
	memoryKeyArgs = map[family][]string{
		familyCL: {"15", "1", "3600", "1"},
		familyTB: {"16", "1", "3600000"},
		familySL: {"10", "3600000"},
	}
	churnKeyArgs = []string{"0", "1", "1", "1"}
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
	family    family
	hits      int // requests per key (SL: hits at distinct instants)
	keys      int
	rssEmpty  int64
	rssLoaded int64
	loadTook  time.Duration
	dbsize    string      // DBSIZE after the load, or why it is unknown
	churn     []rssSample // only for CL, the family the churn phase follows
}

// bytesPerKey is the RSS growth per loaded key.
func (r memoryResult) bytesPerKey() float64 {
	return float64(r.rssLoaded-r.rssEmpty) / float64(r.keys)
}

// runMemory measures each server and family in turn, each on a fresh
// instance: RSS empty, RSS after loading opts.keys distinct keys of the
// family, and for CL then RSS once a second while short-lived keys keep
// arriving. Servers run one at a time so that they do not compete for
// memory bandwidth or CPU. Redis-Lua-fsync is skipped: it holds the same
// keyspace as Redis-Lua, and its loader would only measure fsync speed.
func runMemory(ctx context.Context, f *fleet, kinds []serverKind, opts memoryOptions, progress io.Writer) ([]memoryResult, error) {
	var results []memoryResult
	for _, fam := range opts.families {
		for _, k := range kinds {
			if k == kindRedisLuaFsync {
				continue
			}
			s, err := f.start(ctx, k)
			if err != nil {
				return nil, err
			}
			if err := checkFamilies(ctx, s, "bench:check", []family{fam}); err != nil {
				return nil, err
			}
			r, err := measureMemory(ctx, s, fam, opts, progress)
			if stopErr := f.stop(s); err == nil {
				err = stopErr
			}
			if err != nil {
				return nil, fmt.Errorf("memory of %s keys on %s: %w", fam.name(), k, err)
			}
			results = append(results, r)
		}
	}
	return results, nil
}

// hitsPerKey is how many requests the load makes on each key of fam: one,
// except for the sliding log, whose keys get opts.slHits hits each so that
// the log holds that many entries at distinct instants (the keyspace is
// swept that many times, so a key's hits are a whole pass apart).
func hitsPerKey(fam family, opts memoryOptions) int {
	if fam == familySL {
		return opts.slHits
	}
	return 1
}

func measureMemory(ctx context.Context, s *server, fam family, opts memoryOptions, progress io.Writer) (memoryResult, error) {
	hits := hitsPerKey(fam, opts)
	r := memoryResult{kind: s.kind, family: fam, hits: hits, keys: opts.keys}
	var err error
	if r.rssEmpty, err = rssBytes(s.pid()); err != nil {
		return r, err
	}
	start := time.Now()
	var written atomic.Int64
	keys, total := int64(opts.keys), int64(opts.keys)*int64(hits)
	err = pipelineLoad(ctx, s, fam, opts.conns, 0, &written, func(i int64) (string, bool) {
		return "user:" + strconv.FormatInt(i%keys, 10), i < total
	}, memoryKeyArgs[fam])
	if err != nil {
		return r, fmt.Errorf("load %d keys: %w", opts.keys, err)
	}
	r.loadTook = time.Since(start)
	if r.rssLoaded, err = rssBytes(s.pid()); err != nil {
		return r, err
	}
	r.dbsize = dbsize(ctx, s)
	fmt.Fprintf(progress, "  %-16s %-11s empty %s, %d keys x %d in %.1f s -> %s (%.0f B/key, DBSIZE %s)\n",
		s.kind, fam.name(), formatBytes(r.rssEmpty), opts.keys, hits, r.loadTook.Seconds(), formatBytes(r.rssLoaded), r.bytesPerKey(), r.dbsize)
	if fam != familyCL {
		return r, nil
	}

	// Churn: keys with a one-second life arrive at a fixed rate; sample RSS.
	churnCtx, cancel := context.WithTimeout(ctx, opts.churnFor)
	defer cancel()
	var inserted atomic.Int64
	loadErr := make(chan error, 1)
	go func() {
		loadErr <- pipelineLoad(churnCtx, s, familyCL, opts.conns, opts.churnRate, &inserted, func(i int64) (string, bool) {
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

// pipelineLoad writes fam's command <key(i)> args for i = 0, 1, ... over conns
// connections, connection w taking i ≡ w (mod conns), in pipelined batches,
// until key reports false, ctx ends, or a reply is not an allowed decision
// (every key is new, or below its limit, so every decision must be allowed). rate > 0 paces the
// total to rate keys per second in 10 ms slices; rate 0 goes flat out.
// written counts acknowledged keys. It blocks until every connection is done.
func pipelineLoad(ctx context.Context, s *server, fam family, conns, rate int, written *atomic.Int64, key func(i int64) (string, bool), args []string) error {
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
			errs[w] = loadOneConn(ctx, s, fam, int64(w), int64(conns), batch, rate > 0, written, key, args)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loadOneConn is one connection's share of pipelineLoad.
func loadOneConn(ctx context.Context, s *server, fam family, first, stride int64, batch int, paced bool, written *atomic.Int64, key func(i int64) (string, bool), args []string) error {
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
			c.send(s.limiterCommand(fam, k, args...)...)
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
				return fmt.Errorf("%s on a key below its limit was limited: %v", fam.name(), reply)
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

// memoryMarkdown renders the memory results: one row per family and
// server, then the RSS series of the churn phase (CL).
func memoryMarkdown(rs []memoryResult, opts memoryOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d distinct keys `user:0..%d` per family, each family on a fresh server, loaded over %d pipelined connections; bytes/key = ΔRSS / keys. Keys live an hour:", opts.keys, opts.keys-1, opts.conns)
	for _, f := range opts.families {
		fmt.Fprintf(&b, " %s `<key> %s`", f.name(), strings.Join(memoryKeyArgs[f], " "))
		if n := hitsPerKey(f, opts); n > 1 {
			fmt.Fprintf(&b, " ×%d hits per key at distinct instants", n)
		}
		b.WriteString(";")
	}
	fmt.Fprintf(&b, " Redis runs %s. After the CL load, %s of new keys `churn:N` (`CL.THROTTLE <key> %s`, TTL 1 s) at %d keys/s on top.\n\n",
		scriptNames(opts.families), opts.churnFor, strings.Join(churnKeyArgs, " "), opts.churnRate)
	b.WriteString("| keys | server | RSS empty | RSS loaded | bytes/key | load time | DBSIZE | churn RSS first → last (max) |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		churn := "-"
		if len(r.churn) > 0 {
			maxRSS := int64(0)
			for _, s := range r.churn {
				maxRSS = max(maxRSS, s.rss)
			}
			first, last := r.churn[0], r.churn[len(r.churn)-1]
			churn = fmt.Sprintf("%s → %s (%s)", formatBytes(first.rss), formatBytes(last.rss), formatBytes(maxRSS))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f | %.1f s | %s | %s |\n",
			r.family.name(), r.kind, formatBytes(r.rssEmpty), formatBytes(r.rssLoaded), r.bytesPerKey(), r.loadTook.Seconds(), r.dbsize, churn)
	}
	if !slices.ContainsFunc(rs, func(r memoryResult) bool { return len(r.churn) > 0 }) {
		return b.String()
	}
	b.WriteString("\nDuring churn, one sample per second, the first right after the load: RSS in MiB / DBSIZE in thousands of keys:\n\n")
	for _, r := range rs {
		if len(r.churn) == 0 {
			continue
		}
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

// scriptNames lists the Redis scripts of fs.
func scriptNames(fs []family) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = "bench/" + families[f].scriptN
	}
	return strings.Join(names, ", ")
}
