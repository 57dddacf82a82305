"""Runs Redcell's client session with redis-py (Debian's python3-redis, run by
/usr/bin/python3) with its default options, as systemtest's TestRealClients
asks (systemtest/clients_script_test.go), and prints what the client returned
as one JSON object on stdout. The test compares it with the expected replies;
this script only reports.

    /usr/bin/python3 session.py <port> <session JSON>

The session and the report have the shape clients/node/session.js documents;
"tx" runs through redis-py's default pipeline, which is transactional
(MULTI ... EXEC).
"""
import json
import sys

import redis


def main():
    port, session = int(sys.argv[1]), json.loads(sys.argv[2])
    r = redis.Redis(host="127.0.0.1", port=port)  # default options
    out = {"lib": "redis-py", "version": redis.__version__, "proto": 2,
           "plain": [], "tx": None, "error": None, "after": []}
    for args in session["plain"]:
        out["plain"].append(r.execute_command(*args))
    pipe = r.pipeline()  # transaction=True: MULTI ... EXEC
    for args in session["tx"]:
        pipe.execute_command(*args)
    out["tx"] = pipe.execute()
    out["idBefore"] = r.execute_command("CLIENT", "ID")
    try:
        rep = r.execute_command(*session["bad"])
        out["error"] = {"class": "none", "ownType": False, "message": repr(rep)}
    except redis.exceptions.ResponseError as e:
        out["error"] = {"class": type(e).__name__, "ownType": True, "message": str(e)}
    except Exception as e:  # reported, not raised: the test names the difference
        out["error"] = {"class": type(e).__name__, "ownType": False, "message": str(e)}
    out["idAfter"] = r.execute_command("CLIENT", "ID")
    for args in session["after"]:
        out["after"].append(r.execute_command(*args))
    r.close()
    json.dump(out, sys.stdout, default=repr)  # bytes (a wrong type) show as b'...'
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
