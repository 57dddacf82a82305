"""Drives the Python `limits` library (Debian's python3-limits, run by
/usr/bin/python3) against Redcell as an application would use it, for
systemtest's rate-limit library tests (systemtest/clients_ratelimit_test.go).
The test decides what to ask and when; this script only reports what the
library answered.

    /usr/bin/python3 limits_driver.py <storage URI> <limit, e.g. "5/minute"> \
        [elastic|fixed|moving]

The library is set up as its documentation shows, with the strategy the
third argument names (elastic, the default: the fixed window with elastic
expiry; fixed: the fixed window; moving: the moving window):

    storage = limits.storage.storage_from_string("redis://127.0.0.1:<port>")
    limiter = limits.strategies.FixedWindowElasticExpiryRateLimiter(storage)
    item = limits.parse("5/minute")

(or FixedWindowRateLimiter, or MovingWindowRateLimiter). Then each line on
stdin is one request, an identifier: the script calls
limiter.hit(item, identifier), then limiter.get_window_stats(item,
identifier) as a web framework does for its rate-limit headers. What they
send: elastic, INCRBY then EXPIRE, then GET and TTL; fixed, a Lua script
(INCRBY, and EXPIRE on the window's first hit) then GET and TTL; moving, a
Lua script over a list of the admitted requests' timestamps (LINDEX, LPUSH,
LTRIM, EXPIRE) then another one reading it (LRANGE). The script prints one
JSON object on a line of its own: {"admitted": true|false, "remaining":
<requests left in the window>, "key": <the Redis key limits counts in>}, or
{"error": "<exception class>: <message>"} when the library raised (Redcell
unreachable, TRYAGAIN during a failover...). It exits at the end of stdin.
"""
import json
import sys

import limits
from limits.storage import storage_from_string
from limits.strategies import (
    FixedWindowElasticExpiryRateLimiter,
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
)

STRATEGIES = {
    "elastic": FixedWindowElasticExpiryRateLimiter,
    "fixed": FixedWindowRateLimiter,
    "moving": MovingWindowRateLimiter,
}


def main():
    uri, spec = sys.argv[1], sys.argv[2]
    strategy = STRATEGIES[sys.argv[3] if len(sys.argv) > 3 else "elastic"]
    storage = storage_from_string(uri)
    limiter = strategy(storage)
    item = limits.parse(spec)
    print(json.dumps({"ready": True, "version": limits.__version__}), flush=True)
    for line in sys.stdin:
        ident = line.strip()
        try:
            admitted = limiter.hit(item, ident)
            _, remaining = limiter.get_window_stats(item, ident)
            out = {"admitted": admitted, "remaining": remaining, "key": item.key_for(ident)}
        except Exception as e:  # reported, not raised: the test counts errors
            out = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
