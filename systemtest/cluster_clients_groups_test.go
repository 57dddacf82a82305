package systemtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/slots"
)

// TestClusterClientsOfGroups: real cluster-mode clients, unchanged and each
// seeded with one node's address, against a 3-node cluster of three Raft
// groups (--groups 3), one led by each node, so that each client must read
// three masters and send each key to its group's leader. Two options differ
// from the defaults, each for a client's own failover bug that no server
// reply can work around: go-redis's ClusterStateReloadInterval and
// redis-py's dynamic_startup_nodes (the drivers say why). Every limit is
// checked decision by decision (groupsLedger): exact while the cluster is
// healthy (an error there fails: node-redis does not retry TRYAGAIN, so a
// healthy cluster must never answer it), and across the SIGKILL of one
// group's leader never more admissions than the limit, with the answers
// after the kill consistent with those before: a limit spent before the kill
// stays spent, and a half-spent one admits what is left, less at most the
// requests whose outcome the client reported as an error (or retried
// unseen, one).
//
// The phases share one cluster, so the run costs one cluster's start:
//
//  1. healthy: each client in turn, on keys of all three groups, spends
//     one limit and half of another per group (CL.THROTTLE, and the
//     library on the client: redis_rate's GCRA script on go-redis's
//     ClusterClient, rate-limiter-flexible's RateLimiterRedis on ioredis's
//     Cluster, envoyproxy/ratelimit with REDIS_TYPE=cluster); INFO
//     commandstats shows each decision reached its group's leader, and the
//     client's own slot map names the three leaders; redis-benchmark
//     --cluster lands keys in the three groups.
//  2. the kill of group 0's leader (not the seed), with go-redis and
//     rueidis hammering a key of group 0 so that requests are in flight;
//     then every client at once goes on with its keys until each is
//     decided again (within groupsRecoverTimeout).
//  3. healthy again, on two nodes: spent limits stay spent, fresh limits
//     are exact, redis-benchmark --cluster runs on two masters.
//  4. the victim restarts and takes its group back by a graceful handover,
//     with go-redis hammering that group throughout (no error allowed);
//     every limit is still spent, and redis-cli --cluster check sees three
//     masters.
//
// The clock is frozen on every node (DEBUG CLOCK SET) and every period is a
// day, so nothing refills during the run. Tools CI installs fail the test
// when missing under CI=true and leave their client out elsewhere.
func TestClusterClientsOfGroups(t *testing.T) {
	began := time.Now()
	c := startGroupsCluster(t)
	leaders := waitGroupsView(c, true)
	// The victim leads group 0, the seed group 1: radix (envoy's client)
	// sends everything to group 0's leader, and group 0 speaks for the
	// node in RAFT and INFO raft.
	seedNode, victim := leaders[1], leaders[0]
	victimGroup := 0
	seed := c.nodes[seedNode]
	base := freezeGroupsClocks(t, c)
	clients, bench, cli := openGroupsClients(t, seed.node)
	t.Logf("three nodes leading a group each (%s), %d clients seeded with %s, in %v",
		describeLeaders(c, leaders), len(clients), seed.id, time.Since(began).Round(time.Millisecond))

	// 1. Healthy, three masters.
	phase := time.Now()
	books := map[*groupsClient][]*groupsLedger{}
	for _, cl := range clients {
		t.Run("healthy/"+cl.name, func(t *testing.T) {
			before := commandCalls(t, c)
			var problems []string
			for _, lim := range cl.limiters {
				for g := range clusterGroups {
					spent := newGroupsLedger(cl, lim, "spent", g)
					half := newGroupsLedger(cl, lim, "half", g)
					problems = append(problems, spent.healthy(lim.limit+1)...)
					problems = append(problems, half.healthy(lim.limit/2)...)
					books[cl] = append(books[cl], spent, half)
				}
			}
			problems = append(problems, checkRouting(c, cl, books[cl], leaders, seedNode, before, commandCalls(t, c))...)
			problems = append(problems, checkMastersView(c, cl, books[cl], leaders)...)
			reportGroups(t, cl, problems)
		})
	}
	if bench != "" {
		t.Run("healthy/redis-benchmark", func(t *testing.T) {
			runGroupsBenchmark(t, c, bench, seed.node, "bench3", leaders)
		})
	}
	if cli != "" {
		t.Run("healthy/redis-cli-check", func(t *testing.T) { checkGroupsClusterCheck(t, c, cli, seed.addr(), leaders) })
	}
	t.Logf("phase 1 (healthy, three masters): %v", time.Since(phase).Round(time.Millisecond))

	// 2. The kill, with go-redis and rueidis deciding on the victim's group.
	phase = time.Now()
	var hammers []*groupsHammer
	for _, cl := range clients {
		if cl.name == "go-redis" || cl.name == "rueidis-slots" {
			hammers = append(hammers, startGroupsHammer(cl, pickGroupKey(cl.name+":hammer-kill", victimGroup, identity), victimGroup, 1))
		}
	}
	for _, h := range hammers {
		h.waitWarm(t)
	}
	for _, ls := range books {
		for _, l := range ls {
			l.unseen = 1 // the client may retry a request answered "may or may not have been applied" unseen
		}
	}
	killAt := time.Now()
	c.kill(victim)
	t.Logf("SIGKILL to %s, the leader of group %d, with %d clients deciding on its group", c.nodes[victim].id, victimGroup, len(hammers))
	for _, h := range hammers {
		close(h.stop)
	}
	results := make([][]string, len(clients))
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() { // one client's recovery, alone with its keys
			defer wg.Done()
			results[i] = recoverGroups(cl, books[cl], victimGroup, killAt)
		}()
	}
	wg.Wait()
	for i, cl := range clients {
		t.Run("after-kill/"+cl.name, func(t *testing.T) { reportGroups(t, cl, results[i]) })
	}
	for _, h := range hammers {
		t.Run("after-kill/hammer-"+h.client.name, func(t *testing.T) { reportGroups(t, h.client, h.finish()) })
	}
	t.Logf("phase 2 (the kill, every client decided again): %v", time.Since(phase).Round(time.Millisecond))

	// 3. Healthy again, two nodes leading three groups.
	phase = time.Now()
	leaders = waitGroupsView(c, false)
	t.Logf("after the kill: %s", describeLeaders(c, leaders))
	for _, cl := range clients {
		t.Run("two-nodes/"+cl.name, func(t *testing.T) {
			var problems []string
			for _, l := range books[cl] {
				problems = append(problems, l.stillLimited()...)
			}
			for _, lim := range cl.limiters {
				for g := range clusterGroups {
					fresh := newGroupsLedger(cl, lim, "fresh", g)
					problems = append(problems, fresh.healthy(lim.limit+1)...)
					books[cl] = append(books[cl], fresh)
				}
			}
			reportGroups(t, cl, problems)
		})
	}
	if bench != "" {
		t.Run("two-nodes/redis-benchmark", func(t *testing.T) {
			runGroupsBenchmark(t, c, bench, seed.node, "bench2", leaders)
		})
	}
	t.Logf("phase 3 (healthy, two masters): %v", time.Since(phase).Round(time.Millisecond))

	// 4. The victim back: it takes its group back by a graceful handover.
	phase = time.Now()
	var handover *groupsHammer
	for _, cl := range clients {
		if cl.name == "go-redis" {
			handover = startGroupsHammer(cl, pickGroupKey(cl.name+":hammer-handover", victimGroup, identity), victimGroup, 0)
			handover.waitWarm(t)
		}
	}
	c.restart(victim)
	setClock(t, mustDial(t, c.nodes[victim].addr()), base)
	leaders = waitGroupsView(c, true)
	t.Logf("after the restart: %s", describeLeaders(c, leaders))
	if handover != nil {
		close(handover.stop)
		t.Run("handover/hammer-go-redis", func(t *testing.T) {
			problems := handover.finish()
			if handover.ledger.failed > 0 {
				problems = append(problems, fmt.Sprintf("%s: %d errors while the group was handed over, which a graceful handover never answers: %s",
					handover.ledger.who, handover.ledger.failed, handover.ledger.errs.String()))
			}
			reportGroups(t, handover.client, problems)
		})
	}
	for _, cl := range clients {
		t.Run("rebalanced/"+cl.name, func(t *testing.T) {
			var problems []string
			for _, l := range books[cl] {
				problems = append(problems, l.stillLimited()...)
			}
			reportGroups(t, cl, problems)
		})
	}
	if cli != "" {
		t.Run("rebalanced/redis-cli-check", func(t *testing.T) { checkGroupsClusterCheck(t, c, cli, seed.addr(), leaders) })
	}
	t.Logf("phase 4 (restart, handover, three masters): %v; the whole test: %v",
		time.Since(phase).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// clusterGroups is the test cluster's --groups: one group a node.
const clusterGroups = 3

// groupsLimit is every CL.THROTTLE, redis_rate and rate-limiter-flexible
// limit of the test; envoy's is its config's 10.
const groupsLimit = 4

// groupsRecoverTimeout bounds how long after the kill a client may take to
// decide on all its keys again. An election is under a second here; the
// slowest clients take about 6 s on a busy 2-core machine: node-redis reads
// its map again after a few failed reconnections, envoy's radix every 5 s
// (and its request stuck on the dead node's pool ends at the HTTP
// client's 5 s timeout).
const groupsRecoverTimeout = 30 * time.Second

// groupOf is the group owning key's slot: contiguous, nearly equal ranges
// (node/slotmap.go).
func groupOf(key string) int {
	return int(slots.KeySlotString(key)) * clusterGroups / slots.Count
}

func identity(id string) string { return id }

// pickGroupKey returns prefix-N for the first N whose key (as key maps it:
// a library's prefix) falls in group g.
func pickGroupKey(prefix string, g int, key func(string) string) string {
	for n := 0; ; n++ {
		id := prefix + "-" + strconv.Itoa(n)
		if groupOf(key(id)) == g {
			return id
		}
	}
}

// startGroupsCluster is startDirectCluster with --groups on every node.
func startGroupsCluster(t *testing.T) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, net: newFaultNet(t), secretFile: filepath.Join(dir, "secret"), logDir: dir, direct: true,
		extra: []string{"--groups", strconv.Itoa(clusterGroups)}}
	if err := os.WriteFile(c.secretFile, []byte(clusterSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		c.addNode(fmt.Sprintf("n%d", i), i > 1)
	}
	c.waitFormed(3)
	return c
}

// freezeGroupsClocks freezes every node's clock (each of its groups') at
// one whole second after the latest replicated clock, and returns it.
func freezeGroupsClocks(t *testing.T, c *cluster) int64 {
	t.Helper()
	var latest int64
	for _, i := range c.live() {
		latest = max(latest, replicatedClock(t, mustDial(t, c.nodes[i].addr())))
	}
	base := ceilSecond(max(latest+second, realisticOrigin))
	for _, i := range c.live() {
		setClock(t, mustDial(t, c.nodes[i].addr()), base)
	}
	return base
}

// waitGroupsView waits until every running node's CLUSTER SLOTS names the
// same running master for each group, CLUSTER INFO says ok and CLUSTER
// SHARDS has one shard per master (shardMasters), and, with spread, until
// each node leads exactly one group (INFO raft_groups_leading). It returns
// the leading node of each group.
func waitGroupsView(c *cluster, spread bool) []int {
	c.t.Helper()
	var leaders []int
	what := "every group led by a running node, in every node's CLUSTER SLOTS"
	if spread {
		what = "each node leading one group"
	}
	c.waitFor(clusterFormTimeout, what, func() (bool, string) {
		leaders = nil
		var views []string
		for _, i := range c.live() {
			masters, err := groupMasters(c.nodes[i].addr())
			if err != nil {
				return false, fmt.Sprintf("%s: %v", c.nodes[i].id, err)
			}
			views = append(views, c.nodes[i].id+": "+strings.Join(masters, " "))
			byNode := make([]int, len(masters))
			for g, m := range masters {
				byNode[g] = nodeByAddr(c, m)
				if byNode[g] < 0 || !c.nodes[byNode[g]].running() {
					return false, strings.Join(views, "; ")
				}
			}
			if leaders != nil && fmt.Sprint(leaders) != fmt.Sprint(byNode) {
				return false, strings.Join(views, "; ")
			}
			leaders = byNode
			distinct := map[int]bool{}
			for _, l := range leaders {
				distinct[l] = true
			}
			if n, err := shardMasters(c.nodes[i].addr()); err != nil || n != len(distinct) {
				return false, fmt.Sprintf("%s: CLUSTER SHARDS has %d masters (%v), want %d", c.nodes[i].id, n, err, len(distinct))
			}
			if !spread {
				continue
			}
			info, err := c.info(i)
			if err != nil || infoField(info, "raft_groups_leading") != "1" {
				return false, fmt.Sprintf("%s: raft_groups_leading %q %v", c.nodes[i].id, infoField(info, "raft_groups_leading"), err)
			}
		}
		return leaders != nil, strings.Join(views, "; ")
	})
	return leaders
}

// nodeByAddr is the index of the node advertising addr, or -1.
func nodeByAddr(c *cluster, addr string) int {
	for i, n := range c.nodes {
		if n.advertise == addr {
			return i
		}
	}
	return -1
}

// groupMasters reads CLUSTER SLOTS and CLUSTER INFO on addr: each group's
// master, by group, when the cluster is ok.
func groupMasters(addr string) ([]string, error) {
	r, err := callAddr(addr, probeTimeout, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	if len(r.elems) != clusterGroups {
		return nil, fmt.Errorf("CLUSTER SLOTS = %v, want %d ranges", r, clusterGroups)
	}
	masters := make([]string, clusterGroups)
	for _, e := range r.elems {
		if len(e.elems) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS entry %v", e)
		}
		masters[int(e.elems[0].num)*clusterGroups/slots.Count] = slotsNodeAddr(e.elems[2])
	}
	info, err := callAddr(addr, probeTimeout, "CLUSTER", "INFO")
	if err != nil {
		return nil, err
	}
	if !strings.Contains(info.str, "cluster_state:ok\r\n") {
		return nil, fmt.Errorf("CLUSTER INFO: %q", info.str)
	}
	return masters, nil
}

// shardMasters counts CLUSTER SHARDS' shards, each of which must have one
// master of its own (as in Redis Cluster: rueidis keeps one shard per
// master, so a node leading two shards lost one's slots), together every
// slot.
func shardMasters(addr string) (int, error) {
	r, err := callAddr(addr, probeTimeout, "CLUSTER", "SHARDS")
	if err != nil {
		return 0, err
	}
	masters := map[int64]bool{}
	covered := int64(0)
	for _, shard := range r.elems {
		nodes, _ := shard.field("nodes")
		n := 0
		for _, node := range nodes.elems {
			if role, _ := node.field("role"); role.str == "master" {
				port, _ := node.field("port")
				if masters[port.num] {
					return 0, fmt.Errorf("port %d is the master of two shards: %v", port.num, r)
				}
				masters[port.num] = true
				n++
			}
		}
		if n != 1 {
			return 0, fmt.Errorf("a shard with %d masters: %v", n, shard)
		}
		sl, _ := shard.field("slots")
		for i := 0; i+1 < len(sl.elems); i += 2 {
			covered += sl.elems[i+1].num - sl.elems[i].num + 1
		}
	}
	if covered != slots.Count {
		return 0, fmt.Errorf("the shards cover %d slots: %v", covered, r)
	}
	return len(masters), nil
}

func describeLeaders(c *cluster, leaders []int) string {
	parts := make([]string, len(leaders))
	for g, i := range leaders {
		parts[g] = fmt.Sprintf("group %d: %s", g, c.nodes[i].id)
	}
	return strings.Join(parts, ", ")
}

// commandCalls is INFO commandstats' calls of every command on every
// running node, by node.
func commandCalls(t *testing.T, c *cluster) map[int]map[string]int {
	t.Helper()
	out := map[int]map[string]int{}
	for _, i := range c.live() {
		r, err := c.call(i, "INFO", "commandstats")
		if err != nil || r.isErr() {
			t.Fatalf("INFO commandstats on %s: %v %v", c.nodes[i].id, r, err)
		}
		calls := map[string]int{}
		for _, line := range strings.Split(r.str, "\r\n") {
			name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
			if !ok {
				continue
			}
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest+",", ',')])
			calls[name] = n
		}
		out[i] = calls
	}
	return out
}

// checkRouting: between before and after (commandCalls), each node got
// exactly the routed decisions of the groups it leads (commandstats count a
// command where the client sent it, not where it was forwarded to), or,
// for redis-cli -c, all of them at the seed; for a client that routes
// them anywhere (routeAny), the nodes together got them all.
func checkRouting(c *cluster, cl *groupsClient, ledgers []*groupsLedger, leaders []int, seedNode int, before, after map[int]map[string]int) []string {
	want := map[string]map[int]int{}
	for _, l := range ledgers {
		if l.routed == "" {
			continue
		}
		if want[l.routed] == nil {
			want[l.routed] = map[int]int{}
		}
		to := leaders[l.group]
		switch cl.route {
		case routeSeed:
			to = seedNode
		case routeAny:
			to = -1
		}
		want[l.routed][to] += l.calls
	}
	var problems []string
	for cmd, byNode := range want {
		if cl.route == routeAny {
			total, parts := 0, []string{}
			for i := range c.nodes {
				total += after[i][cmd] - before[i][cmd]
				parts = append(parts, fmt.Sprintf("%s %d", c.nodes[i].id, after[i][cmd]-before[i][cmd]))
			}
			if total != byNode[-1] {
				problems = append(problems, fmt.Sprintf("%s: %d %s calls reached the nodes (%s), want %d", cl.name, total, cmd, strings.Join(parts, ", "), byNode[-1]))
			}
			problems = append(problems, summary(fmt.Sprintf("%s sends %s to any node: %s", cl.name, cmd, strings.Join(parts, ", "))))
			continue
		}
		for i := range c.nodes {
			if got := after[i][cmd] - before[i][cmd]; got != byNode[i] {
				problems = append(problems, fmt.Sprintf("%s: %d %s calls reached %s, want %d (each key's group's leader: %s)",
					cl.name, got, cmd, c.nodes[i].id, byNode[i], describeLeaders(c, leaders)))
			}
		}
	}
	return problems
}

// checkMastersView: the client's own slot map names, for a key of each
// group, that group's leader: three masters.
func checkMastersView(c *cluster, cl *groupsClient, ledgers []*groupsLedger, leaders []int) []string {
	if cl.masters == nil {
		return nil
	}
	keys := make([]string, clusterGroups)
	for _, l := range ledgers {
		keys[l.group] = l.key
	}
	got, err := cl.masters(keys)
	if err != nil {
		return []string{fmt.Sprintf("%s: its slot map: %v", cl.name, err)}
	}
	want := make([]string, len(leaders))
	for g, i := range leaders {
		want[g] = c.nodes[i].advertise
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return []string{fmt.Sprintf("%s: its slot map's masters of groups 0-2 are %v, want %v", cl.name, got, want)}
	}
	return nil
}

// reportGroups fails the test with a client's problems, unless the
// client's checks no longer hold (logged then).
func reportGroups(t *testing.T, cl *groupsClient, problems []string) {
	t.Helper()
	var real []string
	for _, p := range problems {
		if text, ok := strings.CutPrefix(p, summaryPrefix); ok {
			t.Log(text)
		} else {
			real = append(real, p)
		}
	}
	problems = real
	if len(problems) == 0 {
		return
	}
	if cl.invalid != nil {
		if why := cl.invalid(); why != "" {
			t.Logf("%s: not checked (%s): %s", cl.name, why, strings.Join(problems, "; "))
			return
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// runGroupsBenchmark runs redis-benchmark --cluster, seeded with seed,
// deciding CL.THROTTLE on keys prefix:{tag}:N (the benchmark puts in {tag}
// a hash tag of each master's slots): it must exit 0 with no error reply,
// and its keys must land in one group of each master.
func runGroupsBenchmark(t *testing.T, c *cluster, bench string, seed *node, prefix string, leaders []int) {
	out := runTool(t, nil, bench, "--cluster", "-h", "127.0.0.1", "-p", strconv.Itoa(seed.port),
		"-n", "2000", "-r", "1000", "-q", "CL.THROTTLE", prefix+":{tag}:__rand_int__", "99", "1", "86400")
	if strings.Contains(out, "Error") || strings.Contains(out, "ERR") {
		t.Errorf("redis-benchmark --cluster reported errors:\n%s", out)
	}
	r := mustDo(t, mustDial(t, seed.addr()), "KEYS", prefix+":*")
	groups := map[int]int{}
	for _, k := range r.elems {
		groups[groupOf(k.str)]++
	}
	masters := map[int]bool{}
	for _, i := range leaders {
		masters[i] = true
	}
	byMaster := map[int]bool{}
	for g := range groups {
		byMaster[leaders[g]] = true
	}
	if len(groups) != len(masters) || len(byMaster) != len(masters) {
		t.Errorf("redis-benchmark --cluster with %d masters: its %d keys landed in groups %v (keys by group), want one group of each master (%s)\n%s",
			len(masters), len(r.elems), groups, describeLeaders(c, leaders), out)
	}
	t.Logf("redis-benchmark --cluster, %d masters: %d keys in groups %v; %s", len(masters), len(r.elems), groups, strings.TrimSpace(out))
}

// checkGroupsClusterCheck: redis-cli's cluster checker, reading every
// node's CLUSTER NODES and INFO, sees three masters that agree and cover
// every slot.
func checkGroupsClusterCheck(t *testing.T, c *cluster, cli, seed string, leaders []int) {
	out := runTool(t, nil, cli, "--cluster", "check", seed)
	for _, line := range []string{"[OK] All nodes agree about slots configuration.", "[OK] All 16384 slots covered."} {
		if !strings.Contains(out, line) {
			t.Errorf("redis-cli --cluster check lacks %q:\n%s", line, out)
		}
	}
	var masters []string
	for _, m := range regexp.MustCompile(`(?m)M: [0-9a-f]{40} (\S+)`).FindAllStringSubmatch(out, -1) {
		masters = append(masters, m[1])
	}
	sort.Strings(masters)
	var want []string
	for _, i := range leaders {
		want = append(want, c.nodes[i].advertise)
	}
	sort.Strings(want)
	if fmt.Sprint(masters) != fmt.Sprint(want) {
		t.Errorf("redis-cli --cluster check: masters %v, want %v:\n%s", masters, want, out)
	}
}

// openGroupsClients opens every client seeded with seed, and finds
// redis-benchmark and redis-cli (""  when missing outside CI).
func openGroupsClients(t *testing.T, seed *node) (clients []*groupsClient, bench, cli string) {
	t.Helper()
	have := func(ok bool, what string) bool {
		if !ok && os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI (.ci/run installs it)", what)
		}
		if !ok {
			t.Logf("%s is missing (.ci/run installs it): its client is left out", what)
		}
		return ok
	}
	clients = append(clients, openGoRedisGroups(t, seed.addr(), groupsLimit),
		openRueidisGroups(t, seed.addr(), groupsLimit, false), openRueidisGroups(t, seed.addr(), groupsLimit, true))
	if have(exec.Command("/usr/bin/python3", "-c", "import redis.cluster").Run() == nil, "redis-py's cluster client (Debian's python3-redis)") {
		clients = append(clients, openRedisPyGroups(t, seed.port, groupsLimit))
	}
	_, err := exec.LookPath("node")
	dir := filepath.Join(repoDir(t), "clients", "node")
	if have(err == nil, "node") && have(installNodeClients(t, dir), "clients/node/node_modules (npm ci)") {
		clients = append(clients, openNodeGroups(t, "ioredis", seed.port, groupsLimit), openNodeGroups(t, "node-redis", seed.port, groupsLimit))
	}
	if p, err := exec.LookPath("redis-cli"); have(err == nil, "redis-cli") {
		cli = p
		clients = append(clients, openRedisCliGroups(p, seed.port, groupsLimit))
	}
	if p, err := exec.LookPath("redis-benchmark"); have(err == nil, "redis-benchmark") {
		bench = p
	}
	// envoyRatelimitBinary skips (outside CI) the subtest, not the test.
	var envoy string
	t.Run("envoy-binary", func(t *testing.T) { envoy = envoyRatelimitBinary(t) })
	if have(envoy != "", "envoyproxy/ratelimit's service (clients/envoy/build.sh)") {
		clients = append(clients, openEnvoyGroups(t, envoy, seed.addr()))
	}
	return clients, bench, cli
}
