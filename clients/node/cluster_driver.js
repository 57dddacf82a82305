// Drives one Node.js cluster client, ioredis's Cluster or node-redis's
// createCluster, for systemtest's TestClusterClientsOfGroups: one client,
// created once with its default options and seeded with one Redcell node,
// lives through a leader's kill, as an application's would. The test decides
// what to send and when; this script only reports what the client answered.
//
//   node cluster_driver.js <ioredis|node-redis> <port> [points duration]
//
// With ioredis and points, rate-limiter-flexible's RateLimiterRedis (its Lua
// script, registered with ioredis's defineCommand: EVALSHA, EVAL on NOSCRIPT)
// is set up on the cluster client as its documentation shows:
//
//   const cluster = new Redis.Cluster([{ host, port }]);
//   const limiter = new RateLimiterRedis({ storeClient: cluster, points, duration });
//
// It first prints {"ready": true, "version": "<client's version>"}. Then
// each line on stdin is a JSON array of strings and gets one JSON line back:
//
//   [command, args...]        the client sends it, routed by its key:
//                             {"reply": <reply>} or {"error": "<message>"}
//   ["@masters", slot...]     {"reply": [the master the client's own slot
//                             map names for each slot, "host:port"]}
//   ["@flexible", key]        limiter.consume(key): {"admitted", "remaining",
//                             "key"} or {"error": "<message>"} when it
//                             rejected with an Error, not a RateLimiterRes
//
// Requests are handled one at a time, in order. It exits at the end of stdin.
'use strict';

const readline = require('node:readline');

const [lib, port, points, duration] = process.argv.slice(2);
const seed = { host: '127.0.0.1', port: Number(port) };

// A client is {version, send(args), masters(slots), limiter?, close()}.
async function openIoredis() {
  const Redis = require('ioredis');
  // Default options: the ready check waits for CLUSTER INFO's cluster_state:ok.
  const c = new Redis.Cluster([seed], { lazyConnect: true });
  c.on('error', () => {}); // a failed command rejects; the test sees it there
  await c.connect();
  let limiter;
  if (points) {
    const { RateLimiterRedis } = require('rate-limiter-flexible');
    limiter = new RateLimiterRedis({ storeClient: c, points: Number(points), duration: Number(duration) });
  }
  return {
    version: require('ioredis/package.json').version,
    send: (args) => c.call(...args),
    // ioredis keeps, for each slot, its nodes' "host:port", the master first.
    masters: (slots) => slots.map((s) => (c.slots[s] || [])[0] || null),
    limiter,
    close: () => c.disconnect(),
  };
}

async function openNodeRedis() {
  const { createCluster } = require('redis');
  const c = createCluster({ rootNodes: [{ socket: seed }] });
  c.on('error', () => {}); // a failed command rejects; the test sees it there
  await c.connect();
  return {
    version: require('redis/package.json').version,
    // The first argument is the key node-redis routes by (args[1]).
    send: (args) => c.sendCommand(args[1], false, args),
    masters: (slots) => slots.map((s) => {
      const shard = c.slots[s];
      return shard ? `${shard.master.host}:${shard.master.port}` : null;
    }),
    close: () => c.close(),
  };
}

const errText = (e) => String(e && e.message ? e.message : e);

async function answer(client, args) {
  const { RateLimiterRes } = require('rate-limiter-flexible');
  if (args[0] === '@masters') {
    return { reply: client.masters(args.slice(1).map(Number)) };
  }
  if (args[0] === '@flexible') {
    const limiter = client.limiter;
    const res = (admitted, r) => ({ admitted, remaining: r.remainingPoints, key: limiter.getKey(args[1]) });
    try {
      return res(true, await limiter.consume(args[1]));
    } catch (e) {
      return e instanceof RateLimiterRes ? res(false, e) : { error: errText(e) };
    }
  }
  try {
    return { reply: await client.send(args) };
  } catch (e) {
    return { error: errText(e) };
  }
}

async function main() {
  const client = await (lib === 'ioredis' ? openIoredis() : openNodeRedis());
  const report = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  report({ ready: true, version: client.version });
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    report(await answer(client, JSON.parse(line)));
  }
  await client.close();
}

main().catch((e) => {
  process.stderr.write(`${lib}: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
