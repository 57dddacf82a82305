// Drives rate-limiter-flexible's RateLimiterRedisNonAtomic or RateLimiterRedis
// against Redcell as an application would use it, for systemtest's
// rate-limit library tests (systemtest/clients_ratelimit_test.go). The test decides what to ask and
// when; this script only reports what the library answered.
//
//   node ratelimit.js <Redis URL> <points> <duration in seconds> [nonatomic|atomic]
//
// The limiter is set up as the library's documentation shows, on an ioredis
// client with its default options:
//
//   const redis = new Redis('redis://127.0.0.1:<port>');
//   const limiter = new RateLimiterRedisNonAtomic({ storeClient: redis, points, duration });
//
// or, with "atomic", the same options to RateLimiterRedis, which counts in a
// Lua script (SET NX EX, INCRBY, PTTL) that it registers with ioredis's
// defineCommand: EVALSHA, and EVAL when the server answers NOSCRIPT.
//
// Then each line on stdin is one request, a key: the script awaits
// limiter.consume(key) and prints one JSON object on a line of its own:
// {"admitted": true|false, "key": <the Redis key>, "consumed", "remaining",
// "msBeforeNext"}
// (consume resolved, or rejected with a RateLimiterRes), or {"error":
// "<message>"} when it rejected with an Error (Redcell unreachable, TRYAGAIN
// during a failover...). Requests are handled one at a time, in order: the
// non-atomic limiter reads then writes, so concurrent consumes of one key
// may over-admit on any server. It exits at the end of stdin.
'use strict';

const readline = require('node:readline');
const Redis = require('ioredis');
const { RateLimiterRedis, RateLimiterRedisNonAtomic, RateLimiterRes } = require('rate-limiter-flexible');

const limiters = { nonatomic: RateLimiterRedisNonAtomic, atomic: RateLimiterRedis };

async function main() {
  const [url, points, duration, mode = 'nonatomic'] = process.argv.slice(2);
  const Limiter = limiters[mode];
  if (!Limiter) throw new Error(`unknown mode ${mode}: nonatomic or atomic`);
  const redis = new Redis(url);
  redis.on('error', () => {}); // reported through the rejected consumes
  const limiter = new Limiter({
    storeClient: redis,
    points: Number(points),
    duration: Number(duration),
  });
  const report = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  report({ ready: true, version: require('rate-limiter-flexible/package.json').version });
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    const key = line.trim();
    const res = (admitted, r) => ({
      admitted,
      key: limiter.getKey(key),
      consumed: r.consumedPoints,
      remaining: r.remainingPoints,
      msBeforeNext: r.msBeforeNext,
    });
    try {
      report(res(true, await limiter.consume(key)));
    } catch (e) {
      report(e instanceof RateLimiterRes ? res(false, e) : { error: String(e && e.message ? e.message : e) });
    }
  }
  redis.disconnect();
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
