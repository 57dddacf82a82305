package systemtest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A cluster of real redcell processes on loopback for the Cluster tests.
//
// Node i ("n1", "n2", …) gets a port picked before it starts and a faultNet
// proxy in front of that port; it advertises the proxy's address, so every
// peer connection to it (Raft, forwarding, joins) crosses the proxy and can
// be cut, while clients dial the real port. n1 bootstraps (--bootstrap, on
// its first start only, as the README says); the others start with --join
// n1 and become voters once caught up. A restart reuses the data dir, port
// and flags (a node with data ignores --join).

// Bounds of the cluster's own waits on a loaded 2-core machine.
const (
	clusterFormTimeout = 30 * time.Second // three voters, a leader known everywhere
	leaderTimeout      = 15 * time.Second // a ready leader after a fault
	convergeTimeout    = 30 * time.Second // every node applied the same index
	probeTimeout       = 2 * time.Second  // one INFO or RAFT call to one node
)

// testHeartbeat is the --raft-heartbeat-timeout (and so election and lease
// timeout) of every test cluster that does not choose its own. The default,
// 100 ms, is the shipped failover speed (bench -mode failover measures it);
// on a CI machine running the suite beside other CPU-bound work a process
// can stall for longer than that, and a stalled leader steps down, which
// the tests of other behaviour would then meet as spurious TRYAGAIN replies.
// 300 ms keeps such stalls from electing while every fault still takes a
// fraction of a second. TestClusterFailoverDefaults runs the defaults.
const testHeartbeat = 300 * time.Millisecond

// clusterSecret is what every test cluster's nodes prove to each other.
const clusterSecret = "systemtest-cluster-secret-0123456789"

type cluster struct {
	t          testing.TB
	net        *faultNet
	secretFile string
	logDir     string
	extra      []string // flags every node gets
	nodes      []*clusterNode
	// dataDirs places chosen nodes' data dirs (by ID); the others get a
	// fresh t.TempDir().
	dataDirs map[string]string
	// direct: nodes advertise their real address, with no proxy between
	// peers (startDirectCluster), so a stopped node refuses connections as
	// it does without a proxy, where a proxy accepts and then closes them.
	direct bool
	// binaries runs chosen nodes (by ID) with another build than the one
	// TestMain built (upgrade_test.go).
	binaries map[string]string
}

// clusterNode is one member: the process, its ID and the address it
// advertises (its proxy).
type clusterNode struct {
	*node
	id        string
	advertise string
	// metricsAddr is the node's --metrics-addr (/metrics, /healthz,
	// /readyz), on a port picked before its first start and kept.
	metricsAddr string
}

// startCluster starts size nodes with extra flags each and waits until all
// of them are voters that know the same leader.
func startCluster(t testing.TB, size int, extra ...string) *cluster {
	t.Helper()
	return startClusterWithDirs(t, size, nil, extra...)
}

// startClusterWithDirs is startCluster with some nodes' data dirs chosen
// by the test (dataDirs by node ID), e.g. on a small filesystem.
func startClusterWithDirs(t testing.TB, size int, dataDirs map[string]string, extra ...string) *cluster {
	t.Helper()
	return startClusterWith(t, size, dataDirs, nil, extra...)
}

// startClusterWith is startCluster with chosen data dirs and builds (each by
// node ID; nil: none).
func startClusterWith(t testing.TB, size int, dataDirs, binaries map[string]string, extra ...string) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, net: newFaultNet(t), secretFile: filepath.Join(dir, "secret"), logDir: dir, extra: extra, dataDirs: dataDirs, binaries: binaries}
	// Under mutual TLS the proxies cannot read who dials (see faultNet).
	c.net.opaque = slices.Contains(extra, "--tls-cluster")
	if err := os.WriteFile(c.secretFile, []byte(clusterSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= size; i++ {
		c.addNode(fmt.Sprintf("n%d", i), i > 1)
	}
	c.waitFormed(size)
	// Raft traffic must really cross the proxies, or cutting links would
	// test nothing: whoever led while the others joined (n1, unless a busy
	// machine stalled it into an election) replicated to each of them
	// through their proxy.
	for _, n := range c.nodes[1:] {
		if c.net.opaque {
			if c.net.opaqueConnsSeen(n.id) == 0 {
				t.Fatalf("no peer connection to %s went through its proxy", n.id)
			}
			continue
		}
		seen := 0
		for _, from := range c.nodes {
			if from != n {
				seen += c.net.connsSeen(from.id, n.id)
			}
		}
		if seen == 0 {
			t.Fatalf("no peer connection to %s went through %s's proxy", n.id, n.id)
		}
	}
	return c
}

// addNode starts node id with an empty data dir: bootstrapping when join is
// false, else joining through n1's real address (or any running member's
// when n1 is down). It does not wait for the node to become a voter.
func (c *cluster) addNode(id string, join bool) *clusterNode {
	t := c.t
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	realAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	adv := realAddr
	if !c.direct {
		adv = c.net.proxy(t, id, realAddr)
	}
	metricsPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))
	flags := []string{"--cluster-secret-file", c.secretFile, "--node-id", id, "--advertise", adv, "--metrics-addr", metricsAddr}
	if join {
		via := ""
		for _, m := range c.nodes {
			if m.running() {
				via = m.addr()
				break
			}
		}
		if via == "" {
			t.Fatalf("%s: no running member to join", id)
		}
		flags = append(flags, "--join", via)
	}
	if !slices.ContainsFunc(c.extra, func(f string) bool { return strings.HasPrefix(f, "--raft-heartbeat-timeout") }) {
		flags = append(flags, "--raft-heartbeat-timeout", testHeartbeat.String())
	}
	flags = append(flags, c.extra...)
	dataDir := c.dataDirs[id]
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	n := newNode(id, dataDir, c.logDir, flags...)
	n.binary = c.binaries[id]
	n.port = port // the proxy forwards here: a retry must keep it
	if !join {
		n.firstStart = []string{"--bootstrap"}
	}
	if join {
		n.readyWhen = serving
	}
	cn := &clusterNode{node: n, id: id, advertise: adv, metricsAddr: metricsAddr}
	// Its first start may find the port taken: the node binds another one,
	// and its proxy (or, direct, its advertised address) and metrics
	// address follow.
	n.repick = func(port int) error {
		real := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if c.direct {
			cn.advertise = real
			setFlag(n.extra, "--advertise", real)
		} else {
			c.net.retarget(id, real)
		}
		mp, err := freePort()
		if err != nil {
			return err
		}
		cn.metricsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(mp))
		setFlag(n.extra, "--metrics-addr", cn.metricsAddr)
		return nil
	}
	registerNodeCleanup(t, n, 0)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	// Once the node holds data it restarts as any member: ready when
	// serving, whoever leads.
	n.readyWhen = serving
	c.nodes = append(c.nodes, cn)
	return cn
}

// setFlag replaces the value after flag name in flags, in place.
func setFlag(flags []string, name, value string) {
	for i := 0; i+1 < len(flags); i++ {
		if flags[i] == name {
			flags[i+1] = value
		}
	}
}

// serving is readiness for a cluster member: its server answers INFO (the
// caller waits for Raft conditions itself).
func serving(string) bool { return true }

// byID returns the index of node id, or -1.
func (c *cluster) byID(id string) int {
	for i, n := range c.nodes {
		if n.id == id {
			return i
		}
	}
	return -1
}

// live lists the indexes of running nodes.
func (c *cluster) live() []int {
	var out []int
	for i, n := range c.nodes {
		if n.running() {
			out = append(out, i)
		}
	}
	return out
}

// call sends one command to node i on a fresh connection, bounded by
// probeTimeout.
func (c *cluster) call(i int, args ...string) (reply, error) {
	return callAddr(c.nodes[i].addr(), probeTimeout, args...)
}

func callAddr(addr string, timeout time.Duration, args ...string) (reply, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return reply{}, err
	}
	rc := newRESPConn(nc)
	defer rc.close()
	return rc.doWithin(timeout, args...)
}

// info is node i's INFO raft text.
func (c *cluster) info(i int) (string, error) {
	r, err := c.call(i, "INFO", "raft")
	if err != nil {
		return "", err
	}
	if r.isErr() {
		return "", fmt.Errorf("INFO raft: -%s", r.str)
	}
	return r.str, nil
}

// raftStatus is the part of INFO raft the tests look at. Its raft_* fields
// are group 0's, whatever the group count (INFO keeps them so); groups is
// every group's standing, groups[g] for group g, with one group too (then
// made of the raft_* fields), so that code asking about every group needs
// no case for one (cluster_harness_groups_test.go).
type raftStatus struct {
	state, leaderID       string
	ready                 bool
	term, voters          int64
	commit, applied, snap int64
	groups                []groupStatus
}

func parseRaftStatus(info string) raftStatus {
	num := func(name string) int64 {
		v, _ := strconv.ParseInt(infoField(info, name), 10, 64)
		return v
	}
	st := raftStatus{
		state: infoField(info, "raft_state"), leaderID: infoField(info, "raft_leader_id"),
		ready: infoField(info, "raft_ready") == "1",
		term:  num("raft_term"), voters: num("raft_voters"),
		commit: num("raft_commit_index"), applied: num("raft_applied_index"),
		snap: num("raft_last_snapshot_index"),
	}
	st.groups = parseGroupStatuses(info, st)
	return st
}

func (c *cluster) status(i int) (raftStatus, error) {
	info, err := c.info(i)
	if err != nil {
		return raftStatus{}, err
	}
	return parseRaftStatus(info), nil
}

// statuses samples every running node (absent when it did not answer).
func (c *cluster) statuses() map[int]raftStatus {
	out := map[int]raftStatus{}
	for _, i := range c.live() {
		if st, err := c.status(i); err == nil {
			out[i] = st
		}
	}
	return out
}

// waitFor polls cond every pollEvery until it holds or timeout passes, then
// fails the test with what and the last description cond gave.
func (c *cluster) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s; last seen: %s", timeout, what, desc)
		}
		time.Sleep(pollEvery) // polling a cluster condition with a deadline
	}
}

// waitFormed waits until every node is running, reports voters voters and,
// in every group, knows the same leader, which is ready; with several
// groups, until every group's configuration (CLUSTER SLOTS) also holds
// voters voters, since a joining node is promoted in each group on its
// own. It returns group 0's leader.
func (c *cluster) waitFormed(voters int) int {
	c.t.Helper()
	leader := -1
	c.waitFor(clusterFormTimeout, fmt.Sprintf("%d voters and every group's leader known on every node", voters), func() (bool, string) {
		sts := c.statuses()
		desc := describeStatuses(c, sts)
		if len(sts) != len(c.live()) {
			return false, desc
		}
		for _, st := range sts {
			if st.voters != int64(voters) {
				return false, desc
			}
		}
		leaders, ok := c.agreedLeaders(sts)
		if !ok {
			return false, desc
		}
		if c.groupCount() > 1 {
			if why := c.shardVotersMissing(voters); why != "" {
				return false, desc + "; " + why
			}
		}
		leader = leaders[0]
		return true, desc
	})
	return leader
}

func describeStatuses(c *cluster, sts map[int]raftStatus) string {
	var parts []string
	for i := range c.nodes {
		st, ok := sts[i]
		switch {
		case !c.nodes[i].running():
			parts = append(parts, c.nodes[i].id+": down")
		case !ok:
			parts = append(parts, c.nodes[i].id+": no answer")
		default:
			parts = append(parts, fmt.Sprintf("%s: %s term %d leader %q ready %v voters %d commit %d applied %d snap %d%s",
				c.nodes[i].id, st.state, st.term, st.leaderID, st.ready, st.voters, st.commit, st.applied, st.snap, describeGroups(st)))
		}
	}
	return strings.Join(parts, "; ")
}

// waitLeader waits for a ready leader of group 0 (the only group, unless
// the cluster has several) among the nodes in among (all running nodes
// when among is empty) and returns its index.
func (c *cluster) waitLeader(among ...int) int {
	c.t.Helper()
	return c.waitGroupLeader(0, among...)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// kill sends SIGKILL to node i and waits for it to be gone.
func (c *cluster) kill(i int) { c.nodes[i].kill() }

// restart starts node i again on its data dir and port; it is ready when
// serving (the caller waits for Raft conditions).
func (c *cluster) restart(i int) { c.nodes[i].mustRestart(c.t) }

// stopAll sends SIGTERM to every running node at once and requires each to
// exit with code 0.
func (c *cluster) stopAll() {
	c.t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes))
	for _, i := range c.live() {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			code, err := c.nodes[i].stop()
			if err == nil && code != 0 {
				err = fmt.Errorf("%s exited with code %d after SIGTERM, want 0", c.nodes[i].id, code)
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.t.Fatal(err)
	}
}

// killAll sends SIGKILL to every running node.
func (c *cluster) killAll() {
	for _, i := range c.live() {
		_ = c.nodes[i].signal(syscall.SIGKILL)
	}
	for _, i := range c.live() {
		c.nodes[i].kill() // waits for the exit
	}
}

// waitConverged waits until, in every group, every running node has
// applied the same index, equal to every node's commit index, and returns
// group 0's. Writers must have stopped.
func (c *cluster) waitConverged(timeout time.Duration) int64 {
	c.t.Helper()
	var idx int64
	c.waitFor(timeout, "every node to apply the same index in every group", func() (bool, string) {
		sts := c.statuses()
		desc := describeStatuses(c, sts)
		if len(sts) != len(c.live()) || len(sts) == 0 {
			return false, desc
		}
		for g := range c.groupCount() {
			gi := int64(-1)
			for _, st := range sts {
				if g >= len(st.groups) {
					return false, desc
				}
				gs := st.groups[g]
				if gi < 0 {
					gi = gs.applied
				}
				if gs.applied != gi || gs.commit != gi {
					return false, desc
				}
			}
			if g == 0 {
				idx = gi
			}
		}
		return true, desc
	})
	return idx
}

// digest is a node's RAFT DIGEST answer: its applied index and the hex
// SHA-256 of its replicated state at that index.
type digest struct {
	index int64
	hex   string
}

// digest is node i's RAFT DIGEST of group g. With one group the command is
// sent without a group, as every build answers it.
func (c *cluster) digest(i, g int) (digest, error) {
	args := []string{"RAFT", "DIGEST"}
	if c.groupCount() > 1 {
		args = append(args, strconv.Itoa(g))
	}
	r, err := c.call(i, args...)
	if err != nil {
		return digest{}, err
	}
	if r.kind != '*' || len(r.elems) != 2 || r.elems[0].kind != ':' || r.elems[1].kind != '$' || len(r.elems[1].str) != 64 {
		return digest{}, fmt.Errorf("%s on %s: got %v, want [index, hex SHA-256]", strings.Join(args, " "), c.nodes[i].id, r)
	}
	return digest{index: r.elems[0].num, hex: r.elems[1].str}, nil
}

// compareReplicas checks that every running node holds the same state once
// writes have stopped: in every group, all apply the same index, and RAFT
// DIGEST of the group answers the same digest at the same index on each.
// It returns group 0's index.
func (c *cluster) compareReplicas(what string) int64 {
	c.t.Helper()
	t := c.t
	live := c.live()
	groups := c.groupCount()
	// Digests are read one node at a time; an entry committed in between
	// (a leader's no-op, a promotion) moves the index: converge again.
	for attempt := 0; ; attempt++ {
		c.waitConverged(convergeTimeout)
		ds := make([]map[int]digest, groups) // by group, by node
		loading := false
		for g := 0; g < groups && !loading; g++ {
			ds[g] = map[int]digest{}
			for _, i := range live {
				d, err := c.digest(i, g)
				if err != nil && strings.Contains(err.Error(), "LOADING") && attempt < 10 {
					// A node that converged can still be restoring a
					// snapshot the leader sent it (it answers LOADING
					// until done): converge again.
					loading = true
					break
				}
				if err != nil {
					t.Fatalf("%s: group %d: %v", what, g, err)
				}
				ds[g][i] = d
			}
		}
		if loading {
			continue
		}
		moved := -1
		for g := range groups {
			for _, i := range live {
				if ds[g][i].index != ds[g][live[0]].index {
					moved = g
				}
			}
		}
		if moved >= 0 {
			if attempt == 10 {
				t.Fatalf("%s: RAFT DIGEST indexes of group %d keep moving: %v", what, moved, ds[moved])
			}
			continue
		}
		var agreed []string
		for g := range groups {
			first := ds[g][live[0]]
			for _, i := range live {
				if ds[g][i].hex != first.hex {
					t.Errorf("%s: group %d: RAFT DIGEST differs at index %d: %s has %s, %s has %s",
						what, g, first.index, c.nodes[live[0]].id, first.hex, c.nodes[i].id, ds[g][i].hex)
				}
			}
			agreed = append(agreed, fmt.Sprintf("%s… at index %d", first.hex[:16], first.index))
		}
		if groups == 1 {
			t.Logf("%s: %d nodes agree on RAFT DIGEST %s", what, len(live), agreed[0])
		} else {
			t.Logf("%s: %d nodes agree on the RAFT DIGEST of each of %d groups: %s", what, len(live), groups, strings.Join(agreed, ", "))
		}
		return ds[0][live[0]].index
	}
}

// newRESPConn wraps a connected socket.
func newRESPConn(nc net.Conn) *respConn {
	return &respConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), bw: bufio.NewWriterSize(nc, 64<<10)}
}

// doWithin sends one command and waits at most d for its reply (write and
// read). After an I/O error the connection is unusable.
func (c *respConn) doWithin(d time.Duration, args ...string) (reply, error) {
	c.send(args...)
	_ = c.nc.SetWriteDeadline(time.Now().Add(d))
	if err := c.bw.Flush(); err != nil {
		return reply{}, err
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	if _, err := c.br.Peek(1); err != nil {
		return reply{}, err
	}
	r, err := c.parse()
	if err != nil {
		return reply{}, fmt.Errorf("%w: %v", errTornReply, err)
	}
	return r, nil
}

// isFailoverError reports whether an error reply is one a client may get
// while leadership moves: TRYAGAIN (not ready, outcome unknown, shutting
// down) or CLUSTERDOWN (no leader).
func isFailoverError(text string) bool {
	return strings.HasPrefix(text, "TRYAGAIN ") || strings.HasPrefix(text, "CLUSTERDOWN ")
}

// errorCounts counts error texts, for logs.
type errorCounts struct {
	mu sync.Mutex
	m  map[string]int
}

func (e *errorCounts) add(text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]int{}
	}
	e.m[text]++
}

func (e *errorCounts) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(e.m))
	for k := range e.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %q", e.m[k], k)
	}
	return strings.Join(parts, ", ")
}

// eachReadOnly calls fn with a READONLY connection to each node in turn
// (reads from that node's own applied state), closing it after: how the
// tests check that every replica holds the same answer.
func (c *cluster) eachReadOnly(fn func(i int, nc *respConn)) {
	c.t.Helper()
	for i := range c.nodes {
		nc := mustDial(c.t, c.nodes[i].addr())
		expectReply(c.t, nc, wantStatus("OK"), "READONLY")
		fn(i, nc)
		nc.close()
	}
}
