package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redcell/redcell/slots"
)

// The cluster-mode clients of TestClusterClientsOfGroups, each created once,
// with its defaults (two exceptions, each explained where it is set) and one
// node's address, and kept through the leader's kill as an application keeps
// its client; and the rate-limit libraries that run on them. Each is reduced to what the test needs: decisions (a
// groupsLimiter each), where it sends them (INFO commandstats counts the
// command it routes), and, where the library shows it, its own slot map.

// groupsPeriod is the period of every limit: a day, so that no limit
// refills during a run even on a node whose clock is not frozen (the killed
// node, restarted, stamps with its wall clock until the test freezes it).
const groupsPeriod = 86400

// groupsCallTimeout bounds one decision of an in-process client: longer
// than a failover (an election with a 300 ms heartbeat timeout, a client's
// own retries), short enough that a hung call fails the phase's deadline.
const groupsCallTimeout = 10 * time.Second

// decision is one answer of a limiter: allowed or refused with the
// remaining count the library reports, or the client's error (the request
// may or may not have counted).
type decision struct {
	allowed   bool
	remaining int64
	err       string
}

// groupsLimiter is one limit algorithm reached through a client.
type groupsLimiter struct {
	name  string
	limit int
	// decide asks for one admission of id.
	decide func(id string) decision
	// key is the Redis key the limiter keeps id's state under: the test
	// picks ids whose keys fall in a chosen group.
	key func(id string) string
	// routed is the command (INFO commandstats' name) each decision sends
	// once to the node the client picks; "" when a decision sends several
	// or a script (redis_rate's EVALSHA, EVAL after NOSCRIPT).
	routed string
}

// groupsClient is one cluster-mode client under test.
type groupsClient struct {
	name string
	// throttle sends one CL.THROTTLE (or any command answering integers)
	// through the client; nil for a client that only runs a library.
	throttle func(args []string) ([]int64, error)
	// limiters are CL.THROTTLE through throttle, then the libraries on
	// the client.
	limiters []*groupsLimiter
	// route is where the client sends a decision's routed command:
	// routeLeader, to the key's group's master as it read it from CLUSTER
	// SLOTS/SHARDS/NODES; routeSeed (redis-cli -c follows MOVED, which
	// Redcell never sends, so its seed serves everything); routeAny.
	route string
	// masters is the client's own slot map: for each key, the address of
	// the master it sends the key to; nil when it does not show it.
	masters func(keys []string) ([]string, error)
	// invalid says why the client's checks no longer hold ("" while they
	// do): envoy's counters are days of its wall clock, and a run that
	// crossed midnight (UTC) changed its keys.
	invalid func() string
}

// Where a client sends its decisions (groupsClient.route).
const (
	routeLeader = "leader"
	routeSeed   = "seed"
	// routeAny: ioredis sends a command its table does not know
	// (CL.THROTTLE) to a random node, as it has no key to route by; radix
	// (envoy's client) keeps one role a node, the first CLUSTER SLOTS
	// gives it, so the leader of the first range holds every slot in its
	// map. Either way a node that does not lead the key's group forwards.
	routeAny = "any"
)

// withThrottle sets the client's throttle and puts CL.THROTTLE with limit
// first among its limiters.
func (c *groupsClient) withThrottle(limit int, send func(args []string) ([]int64, error)) *groupsClient {
	c.throttle = send
	c.limiters = append([]*groupsLimiter{throttleLimiter(limit, send)}, c.limiters...)
	return c
}

// throttleLimiter is CL.THROTTLE with a burst of limit and a day's period
// through send, which answers the reply's integers or the client's error.
func throttleLimiter(limit int, send func(args []string) ([]int64, error)) *groupsLimiter {
	return &groupsLimiter{
		name:  "CL.THROTTLE",
		limit: limit,
		decide: func(key string) decision {
			row, err := send([]string{"CL.THROTTLE", key, strconv.Itoa(limit - 1), "1", strconv.Itoa(groupsPeriod)})
			if err != nil {
				return decision{err: err.Error()}
			}
			if len(row) != 5 {
				return decision{err: fmt.Sprintf("CL.THROTTLE %s answered %v, want five integers", key, row)}
			}
			return decision{allowed: row[0] == 0, remaining: row[2]}
		},
		key:    func(id string) string { return id },
		routed: "cl.throttle",
	}
}

// openGoRedisGroups is go-redis's ClusterClient, and redis_rate's GCRA
// script on it.
func openGoRedisGroups(t *testing.T, seed string, limit int) *groupsClient {
	// go-redis reads the slot map again on MOVED or ASK, which Redcell
	// never sends, and otherwise every ClusterStateReloadInterval (60 s by
	// default), but not when a master stops answering (a refused dial is
	// retried on the same node): until then it sends the dead leader's
	// groups' keys to it, as it would against a Redis Cluster. A second
	// keeps its failover near Redcell's (docs/cluster.md).
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{seed}, ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { rdb.Close() })
	lim := redis_rate.NewLimiter(rdb)
	rate := redis_rate.Limit{Rate: limit, Burst: limit, Period: groupsPeriod * time.Second}
	c := &groupsClient{
		name: "go-redis",
		limiters: []*groupsLimiter{
			{
				name: "redis_rate", limit: limit,
				decide: func(id string) decision {
					ctx, cancel := context.WithTimeout(context.Background(), groupsCallTimeout)
					defer cancel()
					res, err := lim.Allow(ctx, id, rate)
					if err != nil {
						return decision{err: err.Error()}
					}
					return decision{allowed: res.Allowed > 0, remaining: int64(res.Remaining)}
				},
				key: func(id string) string { return "rate:" + id },
			},
		},
		route: routeLeader,
		masters: func(keys []string) ([]string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), groupsCallTimeout)
			defer cancel()
			var out []string
			for _, k := range keys {
				m, err := rdb.MasterForKey(ctx, k)
				if err != nil {
					return nil, fmt.Errorf("MasterForKey(%s): %w", k, err)
				}
				out = append(out, m.Options().Addr)
			}
			return out, nil
		},
	}
	return c.withThrottle(limit, func(args []string) ([]int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), groupsCallTimeout)
		defer cancel()
		return rdb.Do(ctx, stringsToAny(args)...).Int64Slice()
	})
}

// openRueidisGroups is rueidis's client, which takes its cluster path by
// itself, reading CLUSTER SLOTS, or CLUSTER SHARDS with shards.
func openRueidisGroups(t *testing.T, seed string, limit int, shards bool) *groupsClient {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{seed}, ClusterOption: rueidis.ClusterOption{PreferClusterShards: shards}})
	if err != nil {
		t.Fatalf("rueidis.NewClient (PreferClusterShards %v): %v", shards, err)
	}
	t.Cleanup(client.Close)
	name := "rueidis-slots"
	if shards {
		name = "rueidis-shards"
	}
	c := &groupsClient{name: name, route: routeLeader}
	return c.withThrottle(limit, func(args []string) ([]int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), groupsCallTimeout)
		defer cancel()
		return client.Do(ctx, client.B().Arbitrary(args[0]).Keys(args[1]).Args(args[2:]...).Build()).AsIntSlice()
	})
}

// openLineClient runs a cluster_driver script (clients/python or
// clients/node) and wraps its one client: JSON arrays in, one JSON answer a
// line out (startLineDriver kills it by PID at the test's end).
func openLineClient(t *testing.T, name string, limit int, argv ...string) (*groupsClient, *lineDriver) {
	d := startLineDriver(t, name, argv...)
	send := func(args []string) (json.RawMessage, error) {
		line, _ := json.Marshal(args)
		var a struct {
			Reply json.RawMessage `json:"reply"`
			Error string          `json:"error"`
		}
		if err := d.ask(string(line), &a); err != nil {
			return nil, fmt.Errorf("the driver broke: %w", err)
		}
		if a.Error != "" {
			return nil, errors.New(a.Error)
		}
		return a.Reply, nil
	}
	c := &groupsClient{
		name:  name,
		route: routeLeader,
		masters: func(keys []string) ([]string, error) {
			args := []string{"@masters"} // the drivers take slots
			for _, k := range keys {
				args = append(args, strconv.Itoa(int(slots.KeySlotString(k))))
			}
			raw, err := send(args)
			if err != nil {
				return nil, err
			}
			var out []string
			if err := json.Unmarshal(raw, &out); err != nil {
				return nil, fmt.Errorf("@masters answered %s", raw)
			}
			return out, nil
		},
	}
	return c.withThrottle(limit, func(args []string) ([]int64, error) {
		raw, err := send(args)
		if err != nil {
			return nil, err
		}
		var row []int64
		if err := json.Unmarshal(raw, &row); err != nil {
			return nil, fmt.Errorf("%s answered %s, want integers", args[0], raw)
		}
		return row, nil
	}), d
}

// openRedisPyGroups is redis-py's RedisCluster (clients/python/cluster_driver.py).
func openRedisPyGroups(t *testing.T, seedPort, limit int) *groupsClient {
	c, _ := openLineClient(t, "redis-py", limit, "/usr/bin/python3",
		filepath.Join(repoDir(t), "clients", "python", "cluster_driver.py"), strconv.Itoa(seedPort))
	return c
}

// openNodeGroups is ioredis's Cluster, with rate-limiter-flexible's
// RateLimiterRedis on it, or node-redis's createCluster
// (clients/node/cluster_driver.js).
func openNodeGroups(t *testing.T, lib string, seedPort, limit int) *groupsClient {
	node, _ := exec.LookPath("node")
	argv := []string{node, filepath.Join(repoDir(t), "clients", "node", "cluster_driver.js"), lib, strconv.Itoa(seedPort)}
	if lib == "ioredis" {
		argv = append(argv, strconv.Itoa(limit), strconv.Itoa(groupsPeriod))
	}
	c, d := openLineClient(t, lib, limit, argv...)
	if lib == "ioredis" {
		c.route = routeAny
		c.limiters = append(c.limiters, &groupsLimiter{
			name: "rate-limiter-flexible", limit: limit,
			decide: func(id string) decision {
				var a driverAnswer
				if err := d.ask(`["@flexible",`+strconv.Quote(id)+`]`, &a); err != nil {
					return decision{err: "the driver broke: " + err.Error()}
				}
				return decision{allowed: a.Admitted, remaining: a.Remaining, err: a.Error}
			},
			key: func(id string) string { return "rlflx:" + id },
		})
	}
	return c
}

// openRedisCliGroups is `redis-cli -c -p <seed>`, one process a decision.
func openRedisCliGroups(cli string, seedPort, limit int) *groupsClient {
	c := &groupsClient{name: "redis-cli", route: routeSeed}
	return c.withThrottle(limit, func(args []string) ([]int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), groupsCallTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, cli, append([]string{"-c", "-p", strconv.Itoa(seedPort)}, args...)...).CombinedOutput()
		text := strings.TrimSpace(string(out))
		if err != nil {
			return nil, fmt.Errorf("redis-cli: %v: %s", err, text)
		}
		var row []int64
		for _, f := range strings.Fields(text) {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("redis-cli answered %q", text) // an error reply
			}
			row = append(row, v)
		}
		return row, nil
	})
}

// openEnvoyGroups starts envoyproxy/ratelimit with REDIS_TYPE=cluster and
// the seed as REDIS_URL (its comma list of seeds), on free loopback ports,
// with clients/envoy/config.yaml: 10 requests a day per client value. Its
// counters are redcell_client_<id>_<day>, each decision an INCRBY (and an
// EXPIRE, pipelined on the key's node).
func openEnvoyGroups(t *testing.T, bin, seed string) *groupsClient {
	root := t.TempDir()
	confDir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(repoDir(t), "clients", "envoy", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "config.yaml"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(root, "ratelimit.log")
	var httpPort int
	for attempt := 0; ; attempt++ { // a free port may be taken before the service binds it
		ports := make([]int, 3)
		for i := range ports {
			if ports[i], err = freePort(); err != nil {
				t.Fatal(err)
			}
		}
		httpPort = ports[0]
		// exec dedups the environment, the last value winning.
		err = startEnvoyProcess(t, bin, logPath, append(envoyEnv(root, seed, ports), "REDIS_TYPE=cluster"))
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("envoyproxy/ratelimit (REDIS_TYPE=cluster) did not start: %v\nlog:\n%s", err, readTail(logPath))
		}
	}
	url := "http://127.0.0.1:" + strconv.Itoa(httpPort) + "/json"
	// A request the service sends to a dead node's pool waits there: radix
	// v4's pools block for a connection, and the service gives them no
	// deadline. The timeout ends the wait; the request counts as one whose
	// outcome is unknown (it runs if that node comes back).
	client := &http.Client{Timeout: 5 * time.Second}
	day := envoyWindow()
	return &groupsClient{
		name: "envoy-ratelimit",
		limiters: []*groupsLimiter{{
			name: "envoy-ratelimit", limit: 10, // config.yaml's requests_per_unit
			decide: func(id string) decision {
				r := envoyHit(client, url, id)
				if r.errText != "" {
					return decision{err: r.errText}
				}
				rem := r.remaining
				if rem < 0 {
					rem = 0 // limitRemaining is omitted when 0
				}
				return decision{allowed: r.admitted, remaining: rem}
			},
			key: func(id string) string {
				return fmt.Sprintf("redcell_client_%s_%d", id, envoyWindow()*envoyDaySeconds)
			},
			routed: "incrby",
		}},
		route: routeAny,
		invalid: func() string {
			if envoyWindow() != day {
				return "the run crossed midnight (UTC): envoy's counters are new keys"
			}
			return ""
		},
	}
}

func stringsToAny(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
