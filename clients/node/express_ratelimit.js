// Drives express-rate-limit with rate-limit-redis's RedisStore on a node-redis
// client against Redcell as an application would use it, for systemtest's
// rate-limit library tests (systemtest/clients_ratelimit_test.go). The test
// decides what to ask and when; this script only reports what the library
// answered.
//
//   node express_ratelimit.js <Redis URL> <limit> <window in seconds>
//
// The application is set up as rate-limit-redis's README shows, with
// nothing changed but the Redis URL (and a keyGenerator, so that the test
// picks the identifiers instead of the client's address):
//
//   const client = createClient({ url: 'redis://127.0.0.1:<port>' });
//   await client.connect();
//   app.use(rateLimit({
//     windowMs, limit, standardHeaders: true, legacyHeaders: false,
//     keyGenerator: (req) => req.query.id,
//     store: new RedisStore({ sendCommand: (...args) => client.sendCommand(args) }),
//   }));
//
// The store loads its two scripts with SCRIPT LOAD when the middleware is
// created and counts with EVALSHA (SCRIPT LOAD again on NOSCRIPT). The app
// listens on a free loopback port; each line on stdin is one request, an
// identifier: the script GETs /?id=<identifier> from the app (Node's fetch)
// and prints one JSON object on a line of its own: {"admitted": true (HTTP
// 200) | false (HTTP 429), "remaining": <the RateLimit-Remaining header>,
// "key": <the Redis key>}, or {"error": "HTTP <status>: <body>"} for any
// other answer (the store's error, passed to Express's error handler, is a
// 500: Redcell unreachable, TRYAGAIN during a failover...). Requests are
// handled one at a time, in order. It exits at the end of stdin.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RedisStore } = require('rate-limit-redis');
const { createClient } = require('redis');

// packageVersion reads an installed package's version from its package.json
// (express-rate-limit's "exports" does not export it to require).
function packageVersion(name) {
  const file = path.join(__dirname, 'node_modules', name, 'package.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

async function main() {
  const [url, limit, windowSeconds] = process.argv.slice(2);
  const client = createClient({ url });
  client.on('error', () => {}); // reported through the failed requests
  await client.connect();

  const app = express();
  app.use(rateLimit({
    windowMs: Number(windowSeconds) * 1000,
    limit: Number(limit),
    standardHeaders: true,
    legacyHeaders: false,
    keyGenerator: (req) => String(req.query.id),
    store: new RedisStore({
      sendCommand: (...args) => client.sendCommand(args),
    }),
  }));
  app.get('/', (req, res) => res.send('ok'));
  app.use((err, req, res, next) => res.status(500).send(String(err && err.message ? err.message : err)));
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', (err) => (err ? reject(err) : resolve(s)));
  });
  const base = `http://127.0.0.1:${server.address().port}/`;

  const report = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  report({
    ready: true,
    version: ['express-rate-limit', 'rate-limit-redis', 'express', 'redis']
      .map((p) => `${p} ${packageVersion(p)}`).join(', '),
  });
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    const id = line.trim();
    try {
      const resp = await fetch(base + '?id=' + encodeURIComponent(id));
      const body = await resp.text();
      if (resp.status === 200 || resp.status === 429) {
        report({
          admitted: resp.status === 200,
          remaining: Number(resp.headers.get('ratelimit-remaining')),
          key: 'rl:' + id,
        });
      } else {
        report({ error: `HTTP ${resp.status}: ${body.trim()}` });
      }
    } catch (e) {
      report({ error: String(e && e.message ? e.message : e) });
    }
  }
  server.close();
  await client.quit().catch(() => {});
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
