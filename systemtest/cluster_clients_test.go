package systemtest

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// Cluster-mode clients against a real 3-node Redcell cluster, each seeded
// with one follower's address only and left to discover the rest with the
// Redis Cluster protocol: one shard holding every slot, the Raft leader its
// master and the two followers its replicas (docs/cluster.md). Each client,
// unchanged and with its default options, writes, reads and makes
// CL.THROTTLE decisions that must be exact: max_burst 2 allows three calls
// with 2, 1, 0 remaining and limits the fourth.
//
// rueidis takes two paths: with HELLO's version 7.2.4 it reads CLUSTER SLOTS
// by default, and CLUSTER SHARDS with PreferClusterShards (which it honours
// from version 7 on); the seed's commandstats show which it sent.
//
// Tools CI installs (redis-cli, python3-redis, node and clients/node's
// packages) fail the test when missing in CI and skip it elsewhere.
func TestClusterClients(t *testing.T) {
	c := startDirectCluster(t, 3)
	leader := c.waitLeader()
	follower := (leader + 1) % len(c.nodes)
	seed := c.nodes[follower].addr()

	// What every client will read: the leader first, then the followers.
	want := []string{c.nodes[leader].addr() + " master"}
	for i := range c.nodes {
		if i != leader {
			want = append(want, c.nodes[i].addr()+" replica")
		}
	}
	sort.Strings(want)
	checkClusterView(t, c, leader, follower)

	t.Run("go-redis", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{seed}})
		defer rdb.Close()
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING: %v", err)
		}
		var nodes []string
		err := rdb.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
			nodes = append(nodes, shard.Options().Addr)
			return nil
		})
		if err != nil {
			t.Fatalf("ForEachShard: %v", err)
		}
		sort.Strings(nodes)
		if got := fmt.Sprint(nodes); got != fmt.Sprint(addrsOf(want)) {
			t.Errorf("go-redis shards %s, want %v", got, addrsOf(want))
		}
		if err := rdb.Set(ctx, "goredis:k", "v", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if v, err := rdb.Get(ctx, "goredis:k").Result(); err != nil || v != "v" {
			t.Errorf("GET = %q, %v; want v", v, err)
		}
		var got []any
		for range 4 {
			v, err := rdb.Do(ctx, "CL.THROTTLE", "goredis:t", 2, 10, 60).Result()
			if err != nil {
				t.Fatalf("CL.THROTTLE: %v", err)
			}
			got = append(got, v)
		}
		checkThrottles(t, "go-redis", got)

		// redis_rate's GCRA script (EVALSHA, EVAL on NOSCRIPT) through the
		// cluster client: PerMinute(3) allows three and denies the fourth.
		lim := redis_rate.NewLimiter(rdb)
		for i := range 4 {
			res, err := lim.Allow(ctx, "goredis:rate", redis_rate.PerMinute(3))
			if err != nil {
				t.Fatalf("redis_rate Allow %d: %v", i, err)
			}
			if wantAllowed := i < 3; (res.Allowed == 1) != wantAllowed || res.Remaining != max(2-i, 0) {
				t.Errorf("redis_rate Allow %d: allowed %d remaining %d, want allowed %v remaining %d", i, res.Allowed, res.Remaining, wantAllowed, max(2-i, 0))
			}
		}
	})

	for _, path := range []struct {
		name   string
		shards bool
	}{{"rueidis-slots", false}, {"rueidis-shards", true}} {
		t.Run(path.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
			defer cancel()
			before := topologyCalls(t, seed)
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{seed}, ClusterOption: rueidis.ClusterOption{PreferClusterShards: path.shards}})
			if err != nil {
				t.Fatalf("rueidis.NewClient: %v", err)
			}
			defer client.Close()
			after := topologyCalls(t, seed)
			used := "slots"
			if path.shards {
				used = "shards"
			}
			if after[used] <= before[used] {
				t.Errorf("rueidis did not read CLUSTER %s from the seed (before %v, after %v)", strings.ToUpper(used), before, after)
			}
			var nodes []string
			for addr := range client.Nodes() {
				nodes = append(nodes, addr)
			}
			sort.Strings(nodes)
			if got := fmt.Sprint(nodes); got != fmt.Sprint(addrsOf(want)) {
				t.Errorf("rueidis nodes %s, want %v (a cluster client knows all three)", got, addrsOf(want))
			}
			prefix := path.name
			if err := client.Do(ctx, client.B().Set().Key(prefix+":k").Value("v").Build()).Error(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			if v, err := client.Do(ctx, client.B().Get().Key(prefix+":k").Build()).ToString(); err != nil || v != "v" {
				t.Errorf("GET = %q, %v; want v", v, err)
			}
			var got []any
			for range 4 {
				arr, err := client.Do(ctx, client.B().Arbitrary("CL.THROTTLE").Keys(prefix+":t").Args("2", "10", "60").Build()).AsIntSlice()
				if err != nil {
					t.Fatalf("CL.THROTTLE: %v", err)
				}
				row := make([]any, len(arr))
				for i, v := range arr {
					row[i] = v
				}
				got = append(got, row)
			}
			checkThrottles(t, path.name, got)
		})
	}

	t.Run("redis-py", func(t *testing.T) {
		const python = "/usr/bin/python3"
		requireSetup(t, exec.Command(python, "-c", "import redis.cluster").Run() == nil, "redis-py's cluster client (Debian's python3-redis)")
		r := runClusterScript(t, python, filepath.Join(repoDir(t), "clients", "python", "cluster_session.py"), strconv.Itoa(c.nodes[follower].port), "redispy")
		checkClusterReport(t, r, want)
	})

	for _, lib := range []string{"ioredis", "node-redis"} {
		t.Run(lib, func(t *testing.T) {
			node := requireTool(t, "node")
			dir := filepath.Join(repoDir(t), "clients", "node")
			requireSetup(t, installNodeClients(t, dir), "clients/node/node_modules (npm ci)")
			r := runClusterScript(t, node, filepath.Join(dir, "cluster_session.js"), lib, strconv.Itoa(c.nodes[follower].port), lib)
			wantNodes := want
			if lib == "node-redis" {
				// It keeps no replicas unless told to (useReplicas).
				wantNodes = []string{c.nodes[leader].addr() + " master"}
			}
			checkClusterReport(t, r, wantNodes)
		})
	}

	t.Run("redis-cli", func(t *testing.T) {
		cli := requireTool(t, "redis-cli")
		port := strconv.Itoa(c.nodes[follower].port)
		run := func(args ...string) string {
			return strings.TrimSpace(runTool(t, nil, cli, append([]string{"-c", "-p", port}, args...)...))
		}
		if got := run("SET", "cli:k", "v"); got != "OK" {
			t.Errorf("redis-cli -c SET = %q", got)
		}
		if got := run("GET", "cli:k"); got != "v" {
			t.Errorf("redis-cli -c GET = %q", got)
		}
		var got []any
		for range 4 {
			var row []any
			for _, f := range strings.Fields(run("CL.THROTTLE", "cli:t", "2", "10", "60")) {
				v, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					t.Fatalf("redis-cli -c CL.THROTTLE: %q", f)
				}
				row = append(row, v)
			}
			got = append(got, row)
		}
		checkThrottles(t, "redis-cli -c", got)
		// redis-cli's own cluster checker reads every node's CLUSTER NODES
		// and INFO: they must agree on one master with every slot.
		out := runTool(t, nil, cli, "--cluster", "check", seed)
		for _, line := range []string{"[OK] All nodes agree about slots configuration.", "[OK] All 16384 slots covered."} {
			if !strings.Contains(out, line) {
				t.Errorf("redis-cli --cluster check lacks %q:\n%s", line, out)
			}
		}
		if !strings.Contains(out, c.nodes[leader].addr()+" (") || !strings.Contains(out, "slots | 2 slaves.") {
			t.Errorf("redis-cli --cluster check does not show the leader %s with two replicas:\n%s", c.nodes[leader].addr(), out)
		}
	})
}

// checkClusterView asks the follower the topology commands directly: one
// shard of every slot, the leader first, IDs hashed from the node IDs, the
// cluster ok, and every node's CLUSTER NODES naming itself.
func checkClusterView(t *testing.T, c *cluster, leader, follower int) {
	t.Helper()
	clusterID := func(i int) string {
		sum := sha1.Sum([]byte(c.nodes[i].id))
		return hex.EncodeToString(sum[:])
	}
	conn := mustDial(t, c.nodes[follower].addr())
	if r := mustDo(t, conn, "CLUSTER", "MYID"); r.str != clusterID(follower) {
		t.Errorf("CLUSTER MYID = %v, want %s", r, clusterID(follower))
	}
	r := mustDo(t, conn, "CLUSTER", "SLOTS")
	if len(r.elems) != 1 || len(r.elems[0].elems) != 5 || r.elems[0].elems[0].num != 0 || r.elems[0].elems[1].num != 16383 {
		t.Fatalf("CLUSTER SLOTS = %v, want one range 0-16383 with three nodes", r)
	}
	if m := r.elems[0].elems[2]; slotsNodeAddr(m) != c.nodes[leader].addr() || m.elems[2].str != clusterID(leader) {
		t.Errorf("CLUSTER SLOTS' master = %v, want the leader %s", m, c.nodes[leader].addr())
	}
	info := mustDo(t, conn, "CLUSTER", "INFO").str
	for _, f := range []string{"cluster_state:ok\r\n", "cluster_slots_assigned:16384\r\n", "cluster_known_nodes:3\r\n", "cluster_size:1\r\n"} {
		if !strings.Contains(info, f) {
			t.Errorf("CLUSTER INFO lacks %q:\n%s", f, info)
		}
	}
	if got := mustDo(t, conn, "INFO", "cluster").str; got != "# Cluster\r\ncluster_enabled:1\r\n" {
		t.Errorf("INFO cluster = %q", got)
	}
	line := regexp.MustCompile(`^([0-9a-f]{40}) (\S+):(\d+)@(\d+) (\S+) (\S+) 0 \d+ \d+ connected( 0-16383)?$`)
	for i := range c.nodes {
		text := mustDo(t, mustDial(t, c.nodes[i].addr()), "CLUSTER", "NODES").str
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		myself := 0
		for _, l := range lines {
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("%s: CLUSTER NODES line %q", c.nodes[i].id, l)
				continue
			}
			if strings.HasPrefix(m[5], "myself,") {
				myself++
				if m[1] != clusterID(i) {
					t.Errorf("%s: myself is %s, want %s", c.nodes[i].id, m[1], clusterID(i))
				}
			}
			if isMaster := strings.HasSuffix(m[5], "master"); isMaster != (m[1] == clusterID(leader)) || isMaster != (m[7] != "") {
				t.Errorf("%s: CLUSTER NODES line %q: only the leader is master, with the slots", c.nodes[i].id, l)
			}
		}
		if len(lines) != 3 || myself != 1 {
			t.Errorf("%s: CLUSTER NODES = %q, want three lines, one myself", c.nodes[i].id, text)
		}
	}
}

// slotsNodeAddr is a CLUSTER SLOTS node's host:port.
func slotsNodeAddr(r reply) string {
	if len(r.elems) < 2 {
		return r.String()
	}
	return r.elems[0].str + ":" + strconv.FormatInt(r.elems[1].num, 10)
}

// addrsOf strips the roles from "host:port role" entries.
func addrsOf(entries []string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i], _, _ = strings.Cut(e, " ")
	}
	return out
}

// topologyCalls is the seed's count of CLUSTER SLOTS and CLUSTER SHARDS
// calls (INFO commandstats).
func topologyCalls(t *testing.T, addr string) map[string]int {
	t.Helper()
	info := mustDo(t, mustDial(t, addr), "INFO", "commandstats").str
	out := map[string]int{}
	for _, sub := range []string{"slots", "shards"} {
		if _, rest, ok := strings.Cut(info, "cmdstat_cluster|"+sub+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			out[sub] = n
		}
	}
	return out
}

// checkThrottles checks four CL.THROTTLE replies on one fresh key with
// max_burst 2: allowed with 2, 1 and 0 remaining, then limited, each
// [limited, limit 3, remaining, retry_after, reset_after].
func checkThrottles(t *testing.T, who string, got []any) {
	t.Helper()
	want := [][3]int64{{0, 3, 2}, {0, 3, 1}, {0, 3, 0}, {1, 3, 0}}
	if len(got) != len(want) {
		t.Fatalf("%s: %d CL.THROTTLE replies, want %d", who, len(got), len(want))
	}
	for i, g := range got {
		row, ok := g.([]any)
		if !ok || len(row) != 5 {
			t.Errorf("%s: CL.THROTTLE %d = %v, want five integers", who, i, g)
			continue
		}
		for j := range 3 {
			v, ok := asInt64(row[j])
			if !ok || v != want[i][j] {
				t.Errorf("%s: CL.THROTTLE %d = %v, want %v then retry and reset", who, i, row, want[i])
				break
			}
		}
		if retry, _ := asInt64(row[3]); (i < 3) != (retry == -1) {
			t.Errorf("%s: CL.THROTTLE %d = %v: retry_after %d", who, i, row, retry)
		}
	}
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64: // JSON
		return int64(x), float64(int64(x)) == x
	}
	return 0, false
}

// clusterReport is what clients/python/cluster_session.py and
// clients/node/cluster_session.js print.
type clusterReport struct {
	Lib, Version string
	Nodes        []string
	Ping         any
	Get          string
	Throttle     [][]any
}

// runClusterScript runs a cluster client's session script and decodes its
// report (stdout; stderr is shown when it fails).
func runClusterScript(t *testing.T, name string, argv ...string) clusterReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(argv, " "), err, stdout.String(), stderr.String())
	}
	var r clusterReport
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		t.Fatalf("%s: the report is not JSON (%v):\n%s\n%s", name, err, stdout.String(), stderr.String())
	}
	return r
}

func checkClusterReport(t *testing.T, r clusterReport, wantNodes []string) {
	t.Helper()
	t.Logf("%s %s", r.Lib, r.Version)
	if got := fmt.Sprint(r.Nodes); got != fmt.Sprint(wantNodes) {
		t.Errorf("%s nodes %s, want %v", r.Lib, got, wantNodes)
	}
	if r.Ping != true && r.Ping != "PONG" {
		t.Errorf("%s PING = %v", r.Lib, r.Ping)
	}
	if r.Get != "v" {
		t.Errorf("%s GET = %q, want v", r.Lib, r.Get)
	}
	rows := make([]any, len(r.Throttle))
	for i, row := range r.Throttle {
		rows[i] = row
	}
	checkThrottles(t, r.Lib, rows)
}

// TestClusterSlotsOfGroups: with the keyspace split over several Raft groups
// (--groups 3, one node), each group is one more shard, with the slot range
// the slot map gives it, and go-redis's cluster client routes keys of every
// range.
func TestClusterSlotsOfGroups(t *testing.T) {
	n := startTestNode(t, "groups", "--groups", "3")
	conn := mustDial(t, n.addr())
	// The node serves once group 0 is ready; the other groups elect their
	// leaders meanwhile, and the cluster is ok once every group has one.
	deadline := time.Now().Add(readyTimeout)
	for !strings.Contains(mustDo(t, conn, "CLUSTER", "INFO").str, "cluster_state:ok\r\n") {
		if time.Now().After(deadline) {
			t.Fatalf("CLUSTER INFO never said cluster_state:ok:\n%s", mustDo(t, conn, "CLUSTER", "INFO").str)
		}
		time.Sleep(pollEvery) // polling the groups' elections with a deadline
	}
	r := mustDo(t, conn, "CLUSTER", "SLOTS")
	var got []string
	for _, e := range r.elems {
		if len(e.elems) != 3 || slotsNodeAddr(e.elems[2]) != n.addr() {
			t.Errorf("CLUSTER SLOTS entry %v, want a range served by %s alone", e, n.addr())
			continue
		}
		got = append(got, fmt.Sprintf("%d-%d", e.elems[0].num, e.elems[1].num))
	}
	if want := "[0-5461 5462-10922 10923-16383]"; fmt.Sprint(got) != want {
		t.Errorf("CLUSTER SLOTS ranges %v, want %s", got, want)
	}
	// CLUSTER SHARDS lists a master once, as Redis Cluster does: one shard
	// with the three groups' ranges.
	if r := mustDo(t, conn, "CLUSTER", "SHARDS"); len(r.elems) != 1 {
		t.Errorf("CLUSTER SHARDS = %v, want one shard (one master)", r)
	} else if sl, _ := r.elems[0].field("slots"); sl.String() != "[0 5461 5462 10922 10923 16383]" {
		t.Errorf("CLUSTER SHARDS' slots = %v, want the three ranges", sl)
	}
	info := mustDo(t, conn, "CLUSTER", "INFO").str
	// One node leads all three groups: one master serving slots, as CLUSTER
	// NODES shows it (a line a node), and Redis counts the size in masters.
	if !strings.Contains(info, "cluster_state:ok\r\n") || !strings.Contains(info, "cluster_size:1\r\n") {
		t.Errorf("CLUSTER INFO:\n%s", info)
	}

	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{n.addr()}})
	defer rdb.Close()
	for _, key := range []string{"b", "c", "a"} { // slots 3300, 7365, 15495: one per group
		var rows []any
		for range 4 {
			v, err := rdb.Do(ctx, "CL.THROTTLE", "groups:"+key+"{"+key+"}", 2, 10, 60).Result()
			if err != nil {
				t.Fatalf("CL.THROTTLE: %v", err)
			}
			rows = append(rows, v)
		}
		checkThrottles(t, "go-redis, key "+key, rows)
	}
}
