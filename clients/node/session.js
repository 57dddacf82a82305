// Runs Redcell's client session with one Node.js client, as systemtest's
// TestRealClients asks (systemtest/clients_script_test.go), and prints what
// the client returned as one JSON object on stdout. The test compares it with
// the expected replies; this script only reports.
//
//   node session.js <ioredis|node-redis> <resp: default|2|3> <port> <session JSON>
//
// The session: {"plain": [[args...]...], "tx": [[args...]...], "bad": [args...],
// "after": [[args...]...], "cacheKey": key (node-redis: also check its
// client-side cache on that key)}. The report: {"lib", "version", "proto" (HELLO's
// answer on the client's own connection), "plain": [reply...], "tx": [reply...],
// "error": {"class", "ownType", "message"}, "idBefore"/"idAfter" (CLIENT ID
// around the error: the same connection), "after": [reply...], "cache":
// [TYPE results, node-redis with cacheKey]}.
'use strict';

const [lib, resp, port, sessionJSON] = process.argv.slice(2);
const session = JSON.parse(sessionJSON);

async function withIoredis() {
  const Redis = require('ioredis');
  const opts = { port: Number(port), host: '127.0.0.1', maxRetriesPerRequest: 0, lazyConnect: true };
  if (resp !== 'default') opts.protocol = Number(resp);
  const r = new Redis(opts);
  await r.connect(); // default options: the ready check (INFO) runs before this resolves
  try {
    return {
      version: require('ioredis/package.json').version,
      proto: helloProto(await r.call('HELLO')),
      call: (args) => r.call(...args),
      tx: async (cmds) => {
        const m = r.multi();
        for (const c of cmds) m.call(...c);
        const res = await m.exec(); // [[err, reply], ...]
        return res.map(([err, rep]) => (err ? { error: String(err.message) } : rep));
      },
      isOwnError: (e) => e instanceof Redis.ReplyError,
      close: () => r.quit(),
    };
  } catch (e) {
    r.disconnect();
    throw e;
  }
}

async function withNodeRedis() {
  const { createClient, ErrorReply } = require('redis');
  const opts = { socket: { port: Number(port), host: '127.0.0.1', reconnectStrategy: false } };
  if (resp !== 'default') opts.RESP = Number(resp);
  const c = createClient(opts);
  c.on('error', () => {}); // reported through the rejected calls
  await c.connect();
  return {
    version: require('redis/package.json').version,
    proto: helloProto(await c.sendCommand(['HELLO'])),
    call: (args) => c.sendCommand(args.map(String)),
    tx: async (cmds) => {
      const m = c.multi();
      for (const a of cmds) m.addCommand(a.map(String));
      return m.exec();
    },
    isOwnError: (e) => e instanceof ErrorReply,
    close: () => c.close(),
  };
}

// helloProto reads "proto" from HELLO's reply: a flat array, a Map or an
// object depending on the client and protocol.
function helloProto(h) {
  if (h instanceof Map) return Number(h.get('proto'));
  if (Array.isArray(h)) {
    for (let i = 0; i + 1 < h.length; i += 2) if (String(h[i]) === 'proto') return Number(h[i + 1]);
    return -1;
  }
  if (h && typeof h === 'object' && 'proto' in h) return Number(h.proto);
  return -1;
}

// nodeRedisCache checks node-redis's client-side cache (RESP3 only; an
// option, not a default): TYPE is answered by the server, then by the cache,
// then, after a write on another connection and a PING on the caching one
// (the invalidation comes before its PONG), by the server again. It reports
// each TYPE as "<value> <hit|miss>".
async function nodeRedisCache(key) {
  const { createClient } = require('redis');
  const socket = { port: Number(port), host: '127.0.0.1', reconnectStrategy: false };
  const c = createClient({ socket, RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } });
  const other = createClient({ socket });
  c.on('error', () => {});
  other.on('error', () => {});
  await c.connect();
  await other.connect();
  const out = [];
  const typ = async () => {
    const before = c.clientSideCache.stats().hitCount;
    const v = await c.type(key);
    out.push(`${v} ${c.clientSideCache.stats().hitCount > before ? 'hit' : 'miss'}`);
  };
  await typ();
  await typ();
  await other.sendCommand(['CL.THROTTLE', key, '1', '1', '60']);
  await c.ping();
  await typ();
  await c.close();
  await other.close();
  return out;
}

async function main() {
  const c = lib === 'ioredis' ? await withIoredis() : await withNodeRedis();
  const out = { lib, version: c.version, proto: c.proto, plain: [], tx: null, error: null, after: [] };
  for (const args of session.plain) out.plain.push(await c.call(args));
  out.tx = await c.tx(session.tx);
  out.idBefore = Number(await c.call(['CLIENT', 'ID']));
  try {
    const rep = await c.call(session.bad);
    out.error = { class: 'none', ownType: false, message: JSON.stringify(rep) };
  } catch (e) {
    out.error = { class: e.constructor.name, ownType: c.isOwnError(e), message: String(e.message) };
  }
  out.idAfter = Number(await c.call(['CLIENT', 'ID']));
  for (const args of session.after) out.after.push(await c.call(args));
  await c.close();
  if (session.cacheKey && lib === 'node-redis') out.cache = await nodeRedisCache(session.cacheKey);
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(`${lib} session failed: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
