package systemtest

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/slots"
)

// Bounds of the one-way partition test.
const (
	// onewayAnswerWithin bounds every answer a node other than the cut-off
	// leader gives after the cut: a decision, or a retryable error once it
	// finds the leader unreachable (the node's reach timeout, 750 ms, and
	// the 200 ms of quiet before a ping, with room for a busy machine).
	onewayAnswerWithin = 1500 * time.Millisecond
	// onewayMoveWithin bounds the time from the cut until every group is led
	// elsewhere (the followers' verdicts must stand 3 s, and are asked for
	// once a second).
	onewayMoveWithin = 15 * time.Second
	// onewayServeWithin bounds the time from the move until writes through
	// each of the other nodes are decided again in every group.
	onewayServeWithin = 5 * time.Second
	// onewayLimit is every key's CL.THROTTLE limit (max_burst+1) under a
	// frozen clock: no key may ever admit more.
	onewayLimit = 20
	// onewayGen is how long the load's clients use one key per group
	// before they go on to the next: each key is exhausted within it, so
	// the limit is tested through the whole run.
	onewayGen = 250 * time.Millisecond
	// onewayReadTimeout is the load's clients' own bound on an answer: a
	// request answered later (or never) is recorded as such.
	onewayReadTimeout = 3 * time.Second
)

// TestClusterOneWayPartition cuts every peer connection INTO the leader of
// group 0 (isolateInbound: packets into its port dropped) while its own
// connections to the others keep working, so Raft, which it dials, sees a
// healthy leader and elects nobody. Clients send CL.THROTTLE to every node
// under a frozen clock. Requirements:
//
//   - every request the other two nodes answer after the cut is answered
//     within onewayAnswerWithin: decided, or a retryable error
//     (TRYAGAIN/CLUSTERDOWN), never held for the write timeout;
//   - within onewayMoveWithin, leadership of every group is off the cut
//     node, as both other nodes see it (its followers report that they
//     cannot reach it, and it hands its groups over), and within
//     onewayServeWithin more, writes through each of them are decided in
//     every group;
//   - no key admits more than its limit, and the state the cluster holds
//     accounts for every acknowledged decision (acknowledged allowed ≤
//     consumed ≤ acknowledged allowed + answers of unknown outcome).
//
// Run with one group and with three (each node leading one: only group 0's
// leader is cut off, and only its group moves).
func TestClusterOneWayPartition(t *testing.T) {
	for _, groups := range []int{1, 3} {
		t.Run("groups="+strconv.Itoa(groups), func(t *testing.T) { testOneWay(t, groups) })
	}
}

func testOneWay(t *testing.T, groups int) {
	var flags []string
	if groups > 1 {
		flags = []string{"--groups", strconv.Itoa(groups)}
	}
	c := startCluster(t, 3, flags...)
	all := []int{0, 1, 2}
	leaders := onewayWaitLeaders(c, groups, all, func(ids []string) bool {
		if groups == 1 {
			return true
		}
		// Spread: each node leads one group (node/balance.go).
		return len(slices.Compact(slices.Sorted(slices.Values(ids)))) == groups
	}, clusterFormTimeout, "every group led, each node leading one")
	cut := c.byID(leaders[0])
	var others []int
	for _, i := range all {
		if i != cut {
			others = append(others, i)
		}
	}
	// One frozen instant on every node: each group's leader, whichever it
	// becomes, stamps its entries with it, so no key refills.
	frozen := time.Now().Add(time.Hour).UnixNano()
	for _, i := range all {
		r, err := c.call(i, "DEBUG", "CLOCK", "SET", strconv.FormatInt(frozen, 10))
		if err != nil || r.isErr() {
			t.Fatalf("DEBUG CLOCK SET on %s: %v %v", c.nodes[i].id, r, err)
		}
	}

	load := startOnewayLoad(t, c, groups)
	defer load.halt()
	c.waitFor(leaderTimeout, "a decision by every client before the cut", func() (bool, string) {
		return load.everyClientDecidedSince(time.Time{}, all, groups), load.summary(c)
	})

	cutAt := time.Now()
	c.net.isolateInbound(c.nodes[cut].id)
	t.Logf("groups=%d: leaders by group %v; links into %s cut", groups, leaders, c.nodes[cut].id)

	var movedTo []string
	c.waitFor(onewayMoveWithin, "every group led by another node than "+c.nodes[cut].id, func() (bool, string) {
		ids, ok, desc := onewayLeaders(c, groups, others)
		if ok && !slices.Contains(ids, c.nodes[cut].id) {
			movedTo = ids
			return true, desc
		}
		return false, desc
	})
	movedAt := time.Now()
	c.waitFor(onewayServeWithin, "a decision through each other node in every group after the move", func() (bool, string) {
		return load.everyClientDecidedSince(movedAt, others, groups), load.summary(c)
	})
	servedAt := time.Now()
	load.halt()

	// Answers of the other nodes after the cut: bounded, decided or retryable.
	var slowest time.Duration
	var slowestAt string
	retryable := map[string]int{}
	for _, e := range load.events() {
		if e.node == cut || !e.at.After(cutAt) {
			continue
		}
		took := e.at.Sub(maxTime(e.sent, cutAt))
		if took > slowest {
			slowest, slowestAt = took, fmt.Sprintf("%s group %d, sent %+v after the cut: %s", c.nodes[e.node].id, e.group, e.sent.Sub(cutAt).Round(time.Millisecond), e.describe())
		}
		switch {
		case e.ioErr != "":
			t.Errorf("%s (group %d): no answer within %v to a request sent %v after the cut: %s",
				c.nodes[e.node].id, e.group, onewayReadTimeout, e.sent.Sub(cutAt).Round(time.Millisecond), e.ioErr)
		case e.errText != "" && !isFailoverError(e.errText):
			t.Errorf("%s (group %d): %q, not a retryable error", c.nodes[e.node].id, e.group, e.errText)
		case e.errText != "":
			retryable[e.errText]++
		}
		if took > onewayAnswerWithin && e.ioErr == "" {
			t.Errorf("%s (group %d): answered %v after the cut (or its sending), more than %v: %s",
				c.nodes[e.node].id, e.group, took.Round(time.Millisecond), onewayAnswerWithin, e.describe())
		}
	}
	t.Logf("groups=%d: the other nodes' slowest answer after the cut took %v (%s); retryable errors: %v",
		groups, slowest.Round(time.Millisecond), slowestAt, retryable)
	t.Logf("groups=%d: leadership of every group off %s %v after the cut (leaders now %v); writes through both other nodes decided in every group %v after that",
		groups, c.nodes[cut].id, movedAt.Sub(cutAt).Round(time.Millisecond), movedTo, servedAt.Sub(movedAt).Round(time.Millisecond))

	load.verify(t, c, others[0])
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// onewayLeaders is, by group, the leader every node in among names, when
// they agree, and that leader is among them and reports itself the ready
// leader of the group. desc describes what was seen.
func onewayLeaders(c *cluster, groups int, among []int) (ids []string, ok bool, desc string) {
	type standing struct{ state, leader, ready string }
	seen := map[int][]standing{}
	var parts []string
	for _, i := range among {
		info, err := c.info(i)
		if err != nil {
			return nil, false, fmt.Sprintf("%s: %v", c.nodes[i].id, err)
		}
		st := make([]standing, groups)
		if groups == 1 {
			st[0] = standing{infoField(info, "raft_state"), infoField(info, "raft_leader_id"), infoField(info, "raft_ready")}
		} else {
			for g := range st {
				for _, kv := range strings.Split(infoField(info, "raft_group"+strconv.Itoa(g)), ",") {
					k, v, _ := strings.Cut(kv, "=")
					switch k {
					case "state":
						st[g].state = v
					case "leader_id":
						st[g].leader = v
					case "ready":
						st[g].ready = v
					}
				}
			}
		}
		seen[i] = st
		parts = append(parts, fmt.Sprintf("%s: %v", c.nodes[i].id, st))
	}
	desc = strings.Join(parts, "; ")
	ids = make([]string, groups)
	for g := range groups {
		for _, i := range among {
			l := seen[i][g].leader
			if l == "" || (ids[g] != "" && l != ids[g]) {
				return nil, false, desc
			}
			ids[g] = l
		}
		li := c.byID(ids[g])
		if !slices.Contains(among, li) || seen[li][g].state != "leader" || seen[li][g].ready != "1" {
			return nil, false, desc
		}
	}
	return ids, true, desc
}

// onewayWaitLeaders waits until the nodes in among agree on every group's
// ready leader and good accepts them, and returns them by group.
func onewayWaitLeaders(c *cluster, groups int, among []int, good func([]string) bool, timeout time.Duration, what string) []string {
	c.t.Helper()
	var ids []string
	c.waitFor(timeout, what, func() (bool, string) {
		got, ok, desc := onewayLeaders(c, groups, among)
		if ok && good(got) {
			ids = got
			return true, desc
		}
		return false, desc
	})
	return ids
}

// onewayKey is the key of generation gen in group g of groups.
func onewayKey(gen, g, groups int) string {
	for n := 0; ; n++ {
		k := "ow:" + strconv.Itoa(gen) + ":" + strconv.Itoa(n)
		if int(slots.KeySlotString(k))*groups/slots.Count == g {
			return k
		}
	}
}

// onewayEvent is one request of the load and how it ended.
type onewayEvent struct {
	node, group int
	key         string
	sent, at    time.Time
	allowed     bool   // a decision: allowed (else limited), when errText and ioErr are empty
	errText     string // an error reply
	ioErr       string // no answer within onewayReadTimeout, or the connection broke
}

func (e onewayEvent) describe() string {
	switch {
	case e.ioErr != "":
		return "no answer: " + e.ioErr
	case e.errText != "":
		return "-" + e.errText
	case e.allowed:
		return "allowed"
	}
	return "limited"
}

// onewayLoad is one client per node and group sending CL.THROTTLE to keys of
// its group, a new key every onewayGen, paced a little.
type onewayLoad struct {
	t      testing.TB
	groups int
	start  time.Time
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	mu     sync.Mutex
	evs    []onewayEvent
}

func startOnewayLoad(t testing.TB, c *cluster, groups int) *onewayLoad {
	l := &onewayLoad{t: t, groups: groups, start: time.Now(), stop: make(chan struct{})}
	for i := range c.nodes {
		for g := range groups {
			l.wg.Add(1)
			go l.client(i, c.nodes[i].addr(), g)
		}
	}
	return l
}

func (l *onewayLoad) client(node int, addr string, g int) {
	defer l.wg.Done()
	var conn *respConn
	defer func() {
		if conn != nil {
			conn.close()
		}
	}()
	for {
		select {
		case <-l.stop:
			return
		case <-time.After(5 * time.Millisecond): // pacing, so that the machine is not saturated
		}
		if conn == nil {
			var err error
			if conn, err = dialRESP(addr); err != nil {
				conn = nil
				continue
			}
		}
		key := onewayKey(int(time.Since(l.start)/onewayGen), g, l.groups)
		e := onewayEvent{node: node, group: g, key: key, sent: time.Now()}
		r, err := conn.doWithin(onewayReadTimeout, "CL.THROTTLE", key, strconv.Itoa(onewayLimit-1), "1", "3600", "1")
		e.at = time.Now()
		switch {
		case err != nil:
			e.ioErr = err.Error()
			conn.close()
			conn = nil
		case r.isErr():
			e.errText = r.str
		default:
			v, ok := r.ints()
			if !ok || len(v) != 5 {
				e.errText = "unexpected reply " + r.String()
			} else {
				e.allowed = v[0] == 0
			}
		}
		l.mu.Lock()
		l.evs = append(l.evs, e)
		l.mu.Unlock()
	}
}

func (l *onewayLoad) halt() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *onewayLoad) events() []onewayEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// everyClientDecidedSince reports whether each client on the nodes in
// nodes has had a request sent after since decided (allowed or limited).
func (l *onewayLoad) everyClientDecidedSince(since time.Time, nodes []int, groups int) bool {
	done := map[[2]int]bool{}
	for _, e := range l.events() {
		if e.errText == "" && e.ioErr == "" && e.sent.After(since) {
			done[[2]int{e.node, e.group}] = true
		}
	}
	for _, i := range nodes {
		for g := range groups {
			if !done[[2]int{i, g}] {
				return false
			}
		}
	}
	return true
}

func (l *onewayLoad) summary(c *cluster) string {
	counts := map[string]int{}
	for _, e := range l.events() {
		counts[fmt.Sprintf("%s/g%d %s", c.nodes[e.node].id, e.group, strings.SplitN(e.describe(), " ", 2)[0])]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// verify checks every key against the limit and against the state the
// cluster holds, read through node via (CL.PEEK: linearizable, at the
// group's leader): the acknowledged allowed decisions never exceed the
// limit, and the units consumed are at least those and at most those plus
// the answers whose outcome is unknown.
func (l *onewayLoad) verify(t testing.TB, c *cluster, via int) {
	t.Helper()
	type tally struct{ allowed, unknown, decided int }
	keys := map[string]*tally{}
	for _, e := range l.events() {
		k := keys[e.key]
		if k == nil {
			k = &tally{}
			keys[e.key] = k
		}
		switch {
		case e.ioErr != "", strings.HasPrefix(e.errText, "TRYAGAIN Leadership changed"):
			k.unknown++
		case e.errText != "":
		default:
			k.decided++
			if e.allowed {
				k.allowed++
			}
		}
	}
	conn := mustDial(t, c.nodes[via].addr())
	defer conn.close()
	total, unknown := 0, 0
	for key, k := range keys {
		r, err := conn.doWithin(probeTimeout, "CL.PEEK", key, strconv.Itoa(onewayLimit-1), "1", "3600")
		v, ok := r.ints()
		if err != nil || !ok || len(v) != 5 {
			t.Fatalf("CL.PEEK %s through %s: %v %v", key, c.nodes[via].id, r, err)
		}
		// CL.PEEK answers as a request of one unit would be answered now:
		// allowed with what would remain after it, or limited when none
		// is left.
		consumed := onewayLimit
		if v[0] == 0 {
			consumed = onewayLimit - 1 - int(v[2])
		}
		if k.allowed > onewayLimit {
			t.Errorf("%s: %d allowed answers, over the limit %d", key, k.allowed, onewayLimit)
		}
		if consumed < k.allowed || consumed > k.allowed+k.unknown {
			t.Errorf("%s: %d units consumed, for %d acknowledged allowed answers and %d of unknown outcome", key, consumed, k.allowed, k.unknown)
		}
		total += k.allowed
		unknown += k.unknown
	}
	t.Logf("%d keys checked: %d allowed answers in all, %d answers of unknown outcome, every key within its limit and its state accounting for them", len(keys), total, unknown)
}
