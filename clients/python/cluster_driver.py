"""Drives redis-py's cluster client (redis.cluster.RedisCluster from Debian's
python3-redis, run by /usr/bin/python3) for systemtest's
TestClusterClientsOfGroups: one client, created once with its default options
(but dynamic_startup_nodes, see main) and seeded with one Redcell node, lives
through a leader's kill, as an application's would. The test decides what to send and when; this script
only reports what the client answered.

    /usr/bin/python3 cluster_driver.py <port>

It first prints {"ready": true, "version": <redis-py's version>}. Then each
line on stdin is a JSON array of strings, one command, which the script
sends with RedisCluster.execute_command (the client routes it by its key, as
it learned from CLUSTER SLOTS and COMMAND) and answers on a line of its own:
{"reply": <the reply>} or {"error": "<exception class>: <message>"} when the
client raised (a node unreachable, CLUSTERDOWN or TRYAGAIN after its own
retries...). The array ["@masters", slot...] answers {"reply": ["host:port"
of the master the client's own slot map names for each slot]}: its view of
the cluster, not the server's. It exits at the end of stdin.
"""
import json
import logging
import sys

import redis
from redis.cluster import RedisCluster


def plain(v):
    """A reply as JSON: bytes as text, lists element by element."""
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def main():
    # redis-py logs every exception it retries at ERROR; the test counts the
    # errors it reports, so the traceback of each retry is noise.
    logging.getLogger("redis").setLevel(logging.CRITICAL)
    # Default options but one: redis-py before 4.4 (Debian 12's 4.3.4) reads
    # the slot map again from its startup nodes, by default every node it
    # found, the first range's master first; a node whose connection it
    # dropped gets a new one made from a deep copy of its options, which
    # holds a lock and fails ("cannot pickle '_thread.lock' object", fixed
    # by redis-py#2377), and the exception ends the refresh. With that
    # master dead it never reads the map again. The seed stays up, and
    # keeps its connection.
    rc = RedisCluster(host="127.0.0.1", port=int(sys.argv[1]), dynamic_startup_nodes=False)
    print(json.dumps({"ready": True, "version": redis.__version__}), flush=True)
    for line in sys.stdin:
        args = json.loads(line)
        try:
            if args[0] == "@masters":
                out = [rc.nodes_manager.get_node_from_slot(int(s)).name for s in args[1:]]
            else:
                out = plain(rc.execute_command(*args))
            answer = {"reply": out}
        except Exception as e:  # the client's error is the answer
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
    rc.close()


if __name__ == "__main__":
    main()
