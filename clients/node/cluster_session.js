// Runs a short session with one Node.js cluster client, ioredis's Cluster or
// node-redis's createCluster, seeded with one Redcell node, as systemtest's
// TestClusterClients asks, and prints what the client saw as one JSON object
// on stdout. The test checks it; this script only reports.
//
//   node cluster_session.js <ioredis|node-redis> <port> <key prefix>
//
// The report: {"lib", "version", "nodes": ["host:port role"...] (the topology
// the client read with CLUSTER SLOTS; node-redis keeps no replicas without
// its useReplicas option), "ping", "get" (after a SET),
// "throttle": [four CL.THROTTLE replies on one key, max_burst 2]}.
'use strict';

const [lib, port, prefix] = process.argv.slice(2);
const seed = { host: '127.0.0.1', port: Number(port) };

async function session(c, send) {
  const out = { ping: await send(undefined, ['PING']) };
  await send(prefix + ':k', ['SET', prefix + ':k', 'v']);
  out.get = await send(prefix + ':k', ['GET', prefix + ':k']);
  out.throttle = [];
  for (let i = 0; i < 4; i++) {
    out.throttle.push(await send(prefix + ':t', ['CL.THROTTLE', prefix + ':t', '2', '10', '60']));
  }
  return out;
}

async function withIoredis() {
  const Redis = require('ioredis');
  // Default options: the ready check waits for CLUSTER INFO's cluster_state:ok.
  const c = new Redis.Cluster([seed], { lazyConnect: true });
  await c.connect();
  try {
    const out = await session(c, (_key, args) => c.call(...args));
    out.nodes = [
      ...c.nodes('master').map((n) => `${n.options.host}:${n.options.port} master`),
      ...c.nodes('slave').map((n) => `${n.options.host}:${n.options.port} replica`),
    ].sort();
    out.version = require('ioredis/package.json').version;
    return out;
  } finally {
    c.disconnect();
  }
}

async function withNodeRedis() {
  const { createCluster } = require('redis');
  const c = createCluster({ rootNodes: [{ socket: seed }] });
  c.on('error', () => {}); // a failed command rejects; the test sees it there
  await c.connect();
  try {
    const out = await session(c, (key, args) => c.sendCommand(key, false, args));
    out.nodes = [
      ...c.masters.map((n) => `${n.host}:${n.port} master`),
      ...c.replicas.map((n) => `${n.host}:${n.port} replica`),
    ].sort();
    out.version = require('redis/package.json').version;
    return out;
  } finally {
    await c.close();
  }
}

(lib === 'ioredis' ? withIoredis() : withNodeRedis()).then(
  (out) => {
    out.lib = lib;
    process.stdout.write(JSON.stringify(out) + '\n');
  },
  (err) => {
    process.stderr.write(`${lib}: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
