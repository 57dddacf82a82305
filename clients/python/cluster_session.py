"""Runs a short session with redis-py's cluster client (redis.cluster.RedisCluster
from Debian's python3-redis, run by /usr/bin/python3) seeded with one Redcell
node, as systemtest's TestClusterClients asks, and prints what the client saw
as one JSON object on stdout. The test checks it; this script only reports.

    /usr/bin/python3 cluster_session.py <port> <key prefix>

The report: {"lib", "version", "nodes": ["host:port role"...] (the topology
the client read with CLUSTER SLOTS), "ping", "get" (after a SET), "throttle":
[four CL.THROTTLE replies on one key, max_burst 2]}.
"""
import json
import sys

import redis
from redis.cluster import RedisCluster


def main():
    port, prefix = int(sys.argv[1]), sys.argv[2]
    rc = RedisCluster(host="127.0.0.1", port=port)  # default options
    out = {"lib": "redis-py", "version": redis.__version__}
    role = {"primary": "master", "replica": "replica"}  # the test's words
    out["nodes"] = sorted(f"{n.host}:{n.port} {role[n.server_type]}" for n in rc.get_nodes())
    out["ping"] = rc.ping()
    rc.set(prefix + ":k", "v")
    out["get"] = rc.get(prefix + ":k").decode()
    out["throttle"] = [rc.execute_command("CL.THROTTLE", prefix + ":t", 2, 10, 60) for _ in range(4)]
    rc.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
