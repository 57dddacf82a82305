package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// The libraries mode (issue 34): the Go rate-limit libraries that keep
// their algorithm in a Lua script, called as an application calls them, by
// 20 concurrent callers, on Redcell and on Redis, alternating: how many
// decisions a second the library makes on each. go-redis/redis_rate runs
// its GCRA script by EVALSHA; ulule/limiter loads its fixed-window script
// with SCRIPT LOAD in NewStore and runs it by EVALSHA. Keys are 100,000
// random identifiers, the limit is generous (so most calls are admitted
// and write), and every call's error fails the run: a server answering
// errors fast must not look fast.

// libCallers is the number of concurrent callers: the 20.
const libCallers = 20

// libKeyspace is the number of distinct identifiers the callers draw from.
const libKeyspace = 100000

// libraryLoad is one library: how to set it up on a client and make one
// decision for an identifier.
type libraryLoad struct {
	name string
	open func(ctx context.Context, rdb *redis.Client) (func(ctx context.Context, id string) error, error)
}

var libraryLoads = []libraryLoad{
	{"go-redis/redis_rate v10 (GCRA)", func(ctx context.Context, rdb *redis.Client) (func(context.Context, string) error, error) {
		l := redis_rate.NewLimiter(rdb)
		limit := redis_rate.PerMinute(1000000)
		return func(ctx context.Context, id string) error {
			_, err := l.Allow(ctx, "bench:"+id, limit)
			return err
		}, nil
	}},
	{"ulule/limiter v3 (fixed window)", func(ctx context.Context, rdb *redis.Client) (func(context.Context, string) error, error) {
		store, err := sredis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: "bench-ulule", MaxRetry: 3})
		if err != nil {
			return nil, err
		}
		l := limiter.New(store, limiter.Rate{Period: time.Minute, Limit: 1000000})
		return func(ctx context.Context, id string) error {
			_, err := l.Get(ctx, id)
			return err
		}, nil
	}},
}

// libraryRow is one library on one server, over the rounds.
type libraryRow struct {
	lib    string
	kind   serverKind
	rates  []float64 // decisions/s per round
	median float64
	// cpuUs is the server's CPU µs per decision in each round, and
	// cpuUsMedian their median.
	cpuUs       []float64
	cpuUsMedian float64
}

// runLibraries measures every library on every server, round by round,
// alternating servers, each run after warmup seconds of the same load.
func runLibraries(ctx context.Context, servers []*server, rounds int, secs, warmup float64, progress io.Writer) ([]libraryRow, error) {
	var rows []*libraryRow
	row := map[string]*libraryRow{}
	for round := 1; round <= rounds; round++ {
		for _, l := range libraryLoads {
			for _, s := range servers {
				if s.kind == kindRedisLuaFsync {
					continue
				}
				key := l.name + "|" + string(s.kind)
				r := row[key]
				if r == nil {
					r = &libraryRow{lib: l.name, kind: s.kind}
					row[key] = r
					rows = append(rows, r)
				}
				if _, err := waitForQuiet(ctx, 0.15, 250*time.Millisecond, 10*time.Second); err != nil {
					return nil, err
				}
				rate, cpuUs, err := measureLibrary(ctx, s, l, secs, warmup)
				if err != nil {
					return nil, fmt.Errorf("%s on %s: %w", l.name, s.label(), err)
				}
				r.rates = append(r.rates, rate)
				r.cpuUs = append(r.cpuUs, cpuUs)
				fmt.Fprintf(progress, "  round %d/%d  %-34s %-16s %9.0f decisions/s  %5.1f us CPU each\n", round, rounds, l.name, s.kind, rate, cpuUs)
			}
		}
	}
	out := make([]libraryRow, len(rows))
	for i, r := range rows {
		r.median = median(r.rates)
		r.cpuUsMedian = median(slices.Clone(r.cpuUs))
		out[i] = *r
	}
	return out, nil
}

// measureLibrary runs libCallers callers of l on s for warmup+secs seconds
// and returns the decisions a second of the measured part and the server's
// CPU µs per decision over it.
func measureLibrary(ctx context.Context, s *server, l libraryLoad, secs, warmup float64) (rate, cpuUs float64, err error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr(), PoolSize: libCallers})
	defer rdb.Close()
	decide, err := l.open(ctx, rdb)
	if err != nil {
		return 0, 0, err
	}
	var done atomic.Int64
	var failed atomic.Pointer[error]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range libCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := decide(ctx, strconv.Itoa(rng.IntN(libKeyspace))); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				done.Add(1)
			}
		}()
	}
	time.Sleep(seconds(warmup))
	pids := []int{s.pid()}
	cpuBefore, cpuErr := takeCPUSnapshot(pids)
	start, t0 := done.Load(), time.Now()
	time.Sleep(seconds(secs))
	n, elapsed := done.Load()-start, time.Since(t0)
	cpuAfter, cpuErr2 := takeCPUSnapshot(pids)
	close(stop)
	wg.Wait()
	if p := failed.Load(); p != nil {
		return 0, 0, *p
	}
	if err := errors.Join(cpuErr, cpuErr2); err != nil {
		return 0, 0, err
	}
	rate = float64(n) / elapsed.Seconds()
	if rate > 0 {
		// Only the server's share is wanted: the callers' CPU (this
		// process's) is nobody's noise here.
		serverCores, _ := cpuShares(cpuBefore, cpuAfter, pids, 0, elapsed)
		cpuUs = serverCores / rate * 1e6
	}
	return rate, cpuUs, nil
}

// librariesMarkdown is the mode's table: each library's decisions a second
// on each server and Redcell's ratio to Redis in the same run.
func librariesMarkdown(rows []libraryRow) string {
	var b strings.Builder
	b.WriteString("Load: each Go library as an application calls it (`Allow` of `redis_rate.PerMinute`, `limiter.Get` of a `limiter.Rate`), " +
		strconv.Itoa(libCallers) + " concurrent callers on one go-redis v9 client, " + strconv.Itoa(libKeyspace) + " random identifiers, a limit high enough that calls are admitted (each writes). " +
		"Redcell runs the library's script in its state machine, durably; Redis-Lua in memory. Rates are decisions per second, medians over the rounds.\n\n")
	b.WriteString("| library | server | decisions/s | vs Redis-Lua | CPU µs/decision |\n|---|---|---:|---:|---:|\n")
	redis := map[string]float64{}
	for _, r := range rows {
		if r.kind == kindRedisLua {
			redis[r.lib] = r.median
		}
	}
	for _, r := range rows {
		ratio := "-"
		if base := redis[r.lib]; base > 0 {
			ratio = fmt.Sprintf("%.2fx", r.median/base)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.lib, r.kind, formatRPS(r.median), ratio, formatCPU(r.cpuUsMedian))
	}
	b.WriteString("\n*CPU µs/decision*: the server's CPU time (all its threads, user + system, from /proc) over the measured seconds, per decision.\n")
	return b.String()
}
