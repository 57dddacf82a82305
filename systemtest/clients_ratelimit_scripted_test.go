package systemtest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	limiterredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// The rate-limit libraries of clients_ratelimit_libs_test.go that keep their
// algorithm in a Lua script (EVAL, EVALSHA, SCRIPT LOAD), and the checks of
// how their windows follow Redcell's clock. Each is used as its README
// shows, with nothing changed but the Redis address:
//
//   - go-redis/redis_rate v10 on a go-redis v9 client:
//     redis_rate.NewLimiter(rdb).Allow(ctx, key, redis_rate.PerMinute(10)),
//     GCRA in a script that reads the time with redis.call('TIME') (on
//     Redcell the log entry's instant: DEBUG CLOCK moves it), by EVALSHA with
//     EVAL after NOSCRIPT;
//   - ulule/limiter v3 with its Redis store on go-redis v9:
//     limiter.New(store, rate "10-M").Get(ctx, key), a fixed window in a
//     script NewStore loads with SCRIPT LOAD, run by EVALSHA;
//   - rate-limiter-flexible's RateLimiterRedis on ioredis (ratelimit.js
//     atomic), Python limits' fixed and moving windows (limits_driver.py
//     fixed, moving), express-rate-limit with rate-limit-redis
//     (express_ratelimit.js).

// --- the Go modules, in the test's process ---

// openRedisRate attaches redis_rate's limiter, PerMinute(10), to addr. Its
// state is key "rate:<id>", the theoretical arrival time (seconds since
// 2017, a float) that every admission moves on by one emission interval (6
// s) and a refusal leaves alone: the count it holds is how far ahead of the
// server's TIME it is, in emission intervals.
func openRedisRate(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	lim := redis_rate.NewLimiter(rdb)
	limit := redis_rate.PerMinute(rateLimitLimit)
	return &rateLimitLib{
		name: "redis_rate",
		hit: func(id string) hitResult {
			res, err := lim.Allow(context.Background(), id, limit)
			if err != nil {
				return hitResult{errText: err.Error(), msBeforeNext: -1}
			}
			return hitResult{admitted: res.Allowed > 0, remaining: int64(res.Remaining), msBeforeNext: res.ResetAfter.Milliseconds()}
		},
		counterKey: func(id string) string { return "rate:" + id },
		counted: func(conn *respConn, id string) (int64, error) {
			r, err := conn.do("EVAL", redisRateCountScript, "1", "rate:"+id, strconv.Itoa(redisRateIntervalSeconds))
			switch {
			case err != nil:
				return 0, err
			case r.kind != ':':
				return 0, fmt.Errorf("EVAL (redis_rate's count of rate:%s): %v", id, r)
			}
			return r.num, nil
		},
		admissionsOnly:        true,
		retriesUnknownOutcome: true,
	}
}

// redisRateIntervalSeconds is PerMinute(10)'s emission interval.
const redisRateIntervalSeconds = 60 / rateLimitLimit

// redisRateCountScript reads redis_rate's state as its own script does (the
// same epoch, the same TIME) and answers the admissions it holds: the
// theoretical arrival time's lead over now in emission intervals, rounded
// (on redis-server the clock runs on between the requests and this read by
// far less than half an interval; on Redcell's frozen clock it is exact).
const redisRateCountScript = `
local tat = redis.call('GET', KEYS[1])
if not tat then return 0 end
local t = redis.call('TIME')
local now = (t[1] - 1483228800) + (t[2] / 1000000)
return math.floor((tonumber(tat) - now) / tonumber(ARGV[1]) + 0.5)`

// openUluleLimiter attaches ulule/limiter's Redis store, rate "10-M", to
// addr. NewStore loads the scripts (SCRIPT LOAD); its counter is
// "limiter:<id>", incremented on every request.
func openUluleLimiter(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	rate, err := limiter.NewRateFromFormatted(strconv.Itoa(rateLimitLimit) + "-M")
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { client.Close() })
	store, err := limiterredis.NewStore(client)
	if err != nil {
		t.Fatalf("ulule/limiter's redis.NewStore on %s: %v", addr, err)
	}
	instance := limiter.New(store, rate)
	return &rateLimitLib{
		name: "ulule-limiter",
		hit: func(id string) hitResult {
			ctx, err := instance.Get(context.Background(), id)
			if err != nil {
				return hitResult{errText: err.Error(), msBeforeNext: -1}
			}
			return hitResult{admitted: !ctx.Reached, remaining: ctx.Remaining, msBeforeNext: -1}
		},
		counterKey:            func(id string) string { return limiter.DefaultPrefix + ":" + id },
		retriesUnknownOutcome: true,
	}
}

// --- the line drivers' scripted modes ---

// openPythonLimitsFixed: limits' FixedWindowRateLimiter (its incr_expire.lua
// by EVALSHA), counting in the same key as the elastic strategy.
func openPythonLimitsFixed(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	return openPythonLimitsStrategy(t, addr, "python-limits-fixed", "fixed")
}

// openPythonLimitsMoving: limits' MovingWindowRateLimiter, whose key is a
// list of the admitted requests' timestamps (at most the limit of them).
func openPythonLimitsMoving(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	lib := openPythonLimitsStrategy(t, addr, "python-limits-moving", "moving")
	lib.counted = func(conn *respConn, id string) (int64, error) {
		r, err := conn.do("LLEN", lib.counterKey(id))
		switch {
		case err != nil:
			return 0, err
		case r.kind != ':':
			return 0, fmt.Errorf("LLEN %s: %v", lib.counterKey(id), r)
		}
		return r.num, nil
	}
	lib.admissionsOnly = true
	return lib
}

// openRateLimiterFlexibleAtomic: rate-limiter-flexible's RateLimiterRedis,
// counting in the same key ("rlflx:<id>") as the non-atomic one.
func openRateLimiterFlexibleAtomic(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	return openRateLimiterFlexibleMode(t, addr, "rate-limiter-flexible-atomic", "atomic")
}

// expressWindowSeconds is express_ratelimit.js's windowMs, in seconds.
const expressWindowSeconds = 60

// openExpressRateLimit runs express_ratelimit.js: an Express app with
// express-rate-limit, limit 10 per minute, on rate-limit-redis's store over
// node-redis connected to redis://<addr>. Its counter is "rl:<id>",
// incremented on every request.
func openExpressRateLimit(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	node := requireTool(t, "node")
	dir := filepath.Join(repoDir(t), "clients", "node")
	requireSetup(t, installNodeClients(t, dir), "clients/node/node_modules (npm ci)")
	d := startLineDriver(t, "express-rate-limit", node, filepath.Join(dir, "express_ratelimit.js"),
		"redis://"+addr, strconv.Itoa(rateLimitLimit), strconv.Itoa(expressWindowSeconds))
	return &rateLimitLib{
		name:       "express-rate-limit",
		hit:        func(id string) hitResult { return driverHit(t, d, id) },
		counterKey: func(id string) string { return "rl:" + id },
	}
}

// --- windows on Redcell's clock ---

// windowStep is one request of a window check: at offset from the test's
// base instant, the library must decide admitted with remaining left (and,
// when msBeforeNext is not -1, report that wait).
type windowStep struct {
	at           time.Duration
	admitted     bool
	remaining    int64
	msBeforeNext int64
}

// runWindowSteps moves c's clock to each step's instant and checks the
// library's decision.
func runWindowSteps(t *testing.T, c *respConn, lib *rateLimitLib, base int64, id string, steps []windowStep) {
	t.Helper()
	for i, s := range steps {
		setClock(t, c, base+int64(s.at))
		r := lib.hit(id)
		if r.errText != "" || r.admitted != s.admitted || r.remaining != s.remaining ||
			(s.msBeforeNext != -1 && r.msBeforeNext != s.msBeforeNext) {
			t.Fatalf("%s, step %d at +%v: admitted %v, remaining %d, msBeforeNext %d, error %q; want admitted %v, remaining %d, msBeforeNext %d",
				lib.name, i, s.at, r.admitted, r.remaining, r.msBeforeNext, r.errText, s.admitted, s.remaining, s.msBeforeNext)
		}
	}
}

// fullWindow is the steps that admit the whole limit at +0 and refuse the
// next request there.
func fullWindow() []windowStep {
	var steps []windowStep
	for i := 1; i <= rateLimitLimit; i++ {
		steps = append(steps, windowStep{0, true, int64(rateLimitLimit - i), -1})
	}
	return append(steps, windowStep{0, false, 0, -1})
}

// checkRedisRateGCRA: redis_rate's GCRA on the frozen clock, exactly. Each
// admission moves the theoretical arrival time on by 6 s (ResetAfter 6 s
// per admission); with the burst spent, a refusal waits the full minute;
// one emission interval later exactly one more request passes; a minute
// after that the bucket is full again. Were the script's TIME Redcell's
// wall clock rather than the entry's instant, none of these would hold.
func checkRedisRateGCRA(t *testing.T, c *respConn, lib *rateLimitLib, base int64, id string) {
	t.Helper()
	interval := redisRateIntervalSeconds * time.Second
	var steps []windowStep
	for i := 1; i <= rateLimitLimit; i++ {
		steps = append(steps, windowStep{0, true, int64(rateLimitLimit - i), int64(i) * interval.Milliseconds()})
	}
	minute := time.Minute.Milliseconds()
	steps = append(steps,
		windowStep{0, false, 0, minute},
		windowStep{interval, true, 0, minute},
		windowStep{interval, false, 0, minute},
		windowStep{interval + time.Minute, true, rateLimitLimit - 1, interval.Milliseconds()},
	)
	runWindowSteps(t, c, lib, base, id, steps)
	if v, err := lib.counter(c)(id); err != nil || v != 1 {
		t.Fatalf("redis_rate's state at the end: %d admissions ahead, %v; want 1", v, err)
	}
}

// checkUluleWindow: ulule/limiter's fixed window (INCRBY, PEXPIRE on the
// first hit) is the key's expiry on Redcell's clock: refused through the
// minute, admitted again 1 ms past its end (at the instant itself the key
// still exists: Redis expires a key when the clock is past it).
func checkUluleWindow(t *testing.T, c *respConn, lib *rateLimitLib, base int64, id string) {
	t.Helper()
	runWindowSteps(t, c, lib, base, id, append(fullWindow(),
		windowStep{30 * time.Second, false, 0, -1},
		windowStep{time.Minute, false, 0, -1},
	))
	expectReply(t, c, wantInt(0), "PTTL", lib.counterKey(id))
	runWindowSteps(t, c, lib, base, id, []windowStep{{time.Minute + time.Millisecond, true, rateLimitLimit - 1, -1}})
	expectReply(t, c, wantBulk("1"), "GET", lib.counterKey(id))
	expectReply(t, c, wantInt(time.Minute.Milliseconds()), "PTTL", lib.counterKey(id))
}

// checkExpressWindow: rate-limit-redis's increment script starts a window
// (SET 1 PX windowMs) when PTTL answers 0 or less, and counts on (INCR)
// otherwise: refused through the minute, and at its very end, where PTTL is
// 0, a new window begins.
func checkExpressWindow(t *testing.T, c *respConn, lib *rateLimitLib, base int64, id string) {
	t.Helper()
	runWindowSteps(t, c, lib, base, id, append(fullWindow(),
		windowStep{30 * time.Second, false, 0, -1},
	))
	expectReply(t, c, wantInt(30_000), "PTTL", lib.counterKey(id))
	runWindowSteps(t, c, lib, base, id, []windowStep{{time.Minute, true, rateLimitLimit - 1, -1}})
	expectReply(t, c, wantBulk("1"), "GET", lib.counterKey(id))
	expectReply(t, c, wantInt(expressWindowSeconds*1000), "PTTL", lib.counterKey(id))
}

// checkLimitsFixedWindow: limits' fixed window sets the key's EXPIRE on the
// window's first hit only (unlike the elastic strategy, a refused hit does
// not push it on): refused through the minute, counting from 1 again once
// Redcell's clock is past its end.
func checkLimitsFixedWindow(t *testing.T, c *respConn, lib *rateLimitLib, base int64, id string) {
	t.Helper()
	runWindowSteps(t, c, lib, base, id, append(fullWindow(),
		windowStep{50 * time.Second, false, 0, -1},
	))
	expectReply(t, c, wantInt(limitsWindowSeconds-50), "TTL", lib.counterKey(id))
	runWindowSteps(t, c, lib, base, id, []windowStep{{(limitsWindowSeconds + 1) * time.Second, true, rateLimitLimit - 1, -1}})
	expectReply(t, c, wantBulk("1"), "GET", lib.counterKey(id))
	expectReply(t, c, wantInt(limitsWindowSeconds), "TTL", lib.counterKey(id))
}
