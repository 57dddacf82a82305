package systemtest

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// limiterFamily is one limiter family as the cluster tests drive it: a call
// that takes one unit of a key holding units units that do not refill
// during a test (one a day), and its PEEK. For every family the replies
// read the same way: allowed [0, units, remaining, -1, …] with remaining =
// units left after the call, limited [1, units, 0, retry ≥ 1, …]; and the
// PEEK (of one unit) answers units − taken − 1 while a unit is left,
// limited when none is.
//
// A family kept in plain Redis types (the "ct" counter: INCR to take a
// unit, allowed while the count is at most units; GET to peek) gives its
// own replies, and asLimiter reads them in that shape, so every cluster
// test that drives limiterFamilies (load, failover, restart, membership,
// linearizability) checks it too.
type limiterFamily struct {
	tag  string // in key names
	call func(key string, units int64) []string
	peek func(key string, units int64) []string
	// asLimiter turns a non-error reply of call (peek false) or peek into
	// the limiter shape; nil: the family already answers in it.
	asLimiter func(r reply, units int64, peek bool) reply
}

// decode is r, a reply to f's call or peek, in the limiter shape; error
// replies and malformed ones stay as they are.
func (f limiterFamily) decode(r reply, units int64, peek bool) reply {
	if f.asLimiter == nil || r.isErr() {
		return r
	}
	return f.asLimiter(r, units, peek)
}

// intsReply is an array of integers, as read from the wire.
func intsReply(v ...int64) reply {
	r := reply{kind: '*'}
	for _, n := range v {
		r.elems = append(r.elems, reply{kind: ':', num: n})
	}
	return r
}

// counterAsLimiter reads INCR's reply (the count after the call) and GET's
// (the count, nil for 0) as a limiter of units units: INCR's count c is
// allowed with units − c left while c ≤ units, limited after; GET's count
// c peeks allowed with units − c − 1 left while c < units.
func counterAsLimiter(r reply, units int64, peek bool) reply {
	var count int64
	switch {
	case !peek && r.kind == ':':
		count = r.num - 1 // the count before this call
	case peek && r.null:
		count = 0
	case peek && r.kind == '$':
		n, err := strconv.ParseInt(r.str, 10, 64)
		if err != nil {
			return r
		}
		count = n
	default:
		return r
	}
	if count < units {
		return intsReply(0, units, units-count-1, -1, 0)
	}
	return intsReply(1, units, 0, 1, 0)
}

var limiterFamilies = []limiterFamily{
	{"cl", func(k string, n int64) []string { return []string{"CL.THROTTLE", k, itoa(n - 1), "1", "86400"} },
		func(k string, n int64) []string { return []string{"CL.PEEK", k, itoa(n - 1), "1", "86400"} }, nil},
	{"tb", func(k string, n int64) []string { return []string{"TB.TAKE", k, itoa(n), "1", "86400000"} },
		func(k string, n int64) []string { return []string{"TB.PEEK", k, itoa(n), "1", "86400000"} }, nil},
	{"ti", func(k string, n int64) []string { return []string{"TB.TAKE", k, itoa(n), "1", "86400000", "INTERVAL"} },
		func(k string, n int64) []string { return []string{"TB.PEEK", k, itoa(n), "1", "86400000", "INTERVAL"} }, nil},
	{"sl", func(k string, n int64) []string { return []string{"SL.HIT", k, itoa(n), "86400000"} },
		func(k string, n int64) []string { return []string{"SL.PEEK", k, itoa(n), "86400000"} }, nil},
	{"ct", func(k string, n int64) []string { return []string{"INCR", k} },
		func(k string, n int64) []string { return []string{"GET", k} }, counterAsLimiter},
	// A counter in a hash field (HINCRBY to take a unit, HGET to peek):
	// the token-bucket-in-a-hash pattern, read as the "ct" counter.
	{"hc", func(k string, n int64) []string { return []string{"HINCRBY", k, "taken", "1"} },
		func(k string, n int64) []string { return []string{"HGET", k, "taken"} }, counterAsLimiter},
	// The window counter in one command (Redis 8.8's INCREX): a unit is
	// taken only while the count is below units (UBOUND), so a refused
	// call changes nothing.
	{"ix", func(k string, n int64) []string { return []string{"INCREX", k, "BYINT", "1", "UBOUND", itoa(n)} },
		func(k string, n int64) []string { return []string{"GET", k} }, increxAsLimiter},
	// A list as a log of admissions (RPUSH to take a unit, LLEN to peek).
	{"lc", func(k string, n int64) []string { return []string{"RPUSH", k, "hit"} },
		func(k string, n int64) []string { return []string{"LLEN", k} }, lengthAsLimiter},
	// A counter in a sorted-set score (ZINCRBY to take a unit, ZSCORE to
	// peek; both answer the score as a bulk string in RESP2).
	{"zc", func(k string, n int64) []string { return []string{"ZINCRBY", k, "1", "hits"} },
		func(k string, n int64) []string { return []string{"ZSCORE", k, "hits"} }, scoreAsLimiter},
	// A limiter in a Lua script (EVAL; EVAL_RO to peek) that answers the
	// limiters' five integers itself and stamps each admission with TIME
	// and a math.random draw: every replica must draw the same (RAFT
	// DIGEST compares them).
	{"sc", func(k string, n int64) []string { return []string{"EVAL", scriptTake, "1", k, itoa(n)} },
		func(k string, n int64) []string { return []string{"EVAL_RO", scriptPeek, "1", k, itoa(n)} }, nil},
	// The same limiter past the apply slice (fsm/deferred.go) on its sixth
	// unit and every tenth after: that take is undone in the log, run
	// beside it and committed as its effects if its key did not change
	// meanwhile, and such a peek runs beside the lock. Not every call: a
	// deferred script costs the log its slice, and the load tests need the
	// other families' rate (nor a key's first: the tests that fill the log
	// with one call per key would defer every one).
	{"sd", func(k string, n int64) []string { return []string{"EVAL", scriptLongTake, "1", k, itoa(n)} },
		func(k string, n int64) []string { return []string{"EVAL_RO", scriptLongPeek, "1", k, itoa(n)} }, nil},
}

// The "sc" family's scripts: a count in hash field n, units in ARGV[1].
// scriptLong runs 150,000 instructions when the count ends in 5 (the "sd"
// family).
const (
	scriptLong     = "if tonumber(redis.call('HGET', KEYS[1], 'n') or '0') % 10 == 5 then for i = 1, 150000 do end end\n"
	scriptLongTake = scriptLong + scriptTake
	scriptLongPeek = scriptLong + scriptPeek
	scriptTake     = `local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
local units = tonumber(ARGV[1])
if n >= units then return {1, units, 0, 1, 0} end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'n', n + 1, 'at', t[1] .. '.' .. t[2], 'draw', math.random(1000000))
return {0, units, units - n - 1, -1, 0}`
	scriptPeek = `local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
local units = tonumber(ARGV[1])
if n >= units then return {1, units, 0, 1, 0} end
return {0, units, units - n - 1, -1, 0}`
)

// scoreAsLimiter reads ZINCRBY's score after the call and ZSCORE's score
// (nil for a missing member) as the "ct" counter's INCR and GET.
func scoreAsLimiter(r reply, units int64, peek bool) reply {
	if !peek && r.kind == '$' && !r.null {
		n, err := strconv.ParseInt(r.str, 10, 64)
		if err != nil {
			return r
		}
		return counterAsLimiter(reply{kind: ':', num: n}, units, false)
	}
	return counterAsLimiter(r, units, peek)
}

// increxAsLimiter reads INCREX's [count, applied] (applied 1: allowed with
// units − count left; 0: limited) and GET's count as a limiter of units.
func increxAsLimiter(r reply, units int64, peek bool) reply {
	if peek {
		return counterAsLimiter(r, units, true)
	}
	v, ok := r.ints()
	switch {
	case !ok || len(v) != 2 || v[0] < 0 || v[0] > units:
		return r
	case v[1] == 1:
		return intsReply(0, units, units-v[0], -1, 0)
	case v[1] == 0 && v[0] == units:
		return intsReply(1, units, 0, 1, 0)
	}
	return r
}

// lengthAsLimiter reads RPUSH's length after the call and LLEN's length as
// the "ct" counter's INCR and GET.
func lengthAsLimiter(r reply, units int64, peek bool) reply {
	if peek && r.kind == ':' {
		if r.num == 0 {
			return counterAsLimiter(reply{kind: '$', null: true}, units, true)
		}
		return counterAsLimiter(reply{kind: '$', str: itoa(r.num)}, units, true)
	}
	return counterAsLimiter(r, units, peek)
}

// familyOfKey is the family whose tag a load key carries (prefix:tag:n).
func familyOfKey(key string) limiterFamily {
	parts := strings.Split(key, ":")
	if len(parts) >= 2 {
		for _, f := range limiterFamilies {
			if parts[len(parts)-2] == f.tag {
				return f
			}
		}
	}
	return limiterFamilies[0]
}

// decisionLoad sends limiter calls of every family on keys of 100 units
// (one a day: no refill during a test) — CL.THROTTLE key 99 1 86400,
// TB.TAKE key 100 1 86400000 (greedy and INTERVAL), SL.HIT key 100
// 86400000, each worker cycling through the four — from workers each bound
// to one node's client port, one request at a time, and records every
// reply: when each successful decision arrived (for the gap without
// decisions), the remaining value of every allowed one per key, and per key
// the requests whose outcome is unknown (a TRYAGAIN that says so, a timeout,
// a broken connection).
//
// Per family, all workers share one key at a time, and move to the next as
// soon as one of them is refused on it: keys run out of units one after the
// other all through the test, whatever the throughput, failover included,
// so the "never more than 100" check bites at every moment, with every
// worker contending for the last units.
//
// With several groups each worker serves one group (the load's workers
// take groups 0, 1, … in turn, across nodes), and each family has one key
// in use per group, shared by that group's workers: a group whose leader
// fails stalls only its own workers, so each group's gap without decisions
// (longestGapOf) says how long that group could not decide. Keys then hold
// groupedCapacity units.
type decisionLoad struct {
	start       time.Time
	prefix      string
	groups      int            // the cluster's group count: keys are spread over them
	units       int64          // every key's units: decisionCapacity, groupedCapacity with groups
	gen         []atomic.Int64 // per family and group (genIndex), the key in use: prefix:tag:gen
	readTimeout time.Duration

	stop chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	successes []decisionEvent
	allowed   map[string][]int64 // remaining of each allowed reply
	limited   map[string]int
	unknown   map[string]int // outcome unknown (possibly applied)
	failed    map[string]int // error replies that say nothing happened
	bad       []string       // malformed replies or unexpected errors
	ioErrs    map[int]int    // per node index: timeouts, broken connections
	dialErrs  map[int]int
	errs      errorCounts
	failures  []failureEvent // error replies and I/O errors, in order
}

// failureEvent is one request that got no decision.
type failureEvent struct {
	node     int
	sent, at time.Time
	what     string
}

// decisionEvent is one successful reply (allowed or limited), with the
// group of its key.
type decisionEvent struct {
	node, group int
	sent, at    time.Time
}

const (
	decisionBurst    = 99
	decisionCapacity = decisionBurst + 1
	// groupedCapacity is a key's units when the cluster has several
	// groups: there each worker serves one group's keys (so one group's
	// failover stalls only its own workers, and each group's gap without
	// decisions can be told apart), two workers share a key instead of
	// six, and keys of 100 units would not run out within a test.
	groupedCapacity = 20
)

// startDecisionLoad starts perNode workers on each node index in nodes.
// With several groups the load's workers, counted across nodes, serve
// groups 0, 1, … in turn, and keys hold groupedCapacity units.
func startDecisionLoad(t testing.TB, c *cluster, prefix string, nodes []int, perNode int, readTimeout time.Duration) *decisionLoad {
	l := &decisionLoad{
		start: time.Now(), prefix: prefix, groups: c.groupCount(), units: decisionCapacity, readTimeout: readTimeout,
		stop:    make(chan struct{}),
		allowed: map[string][]int64{}, limited: map[string]int{}, unknown: map[string]int{}, failed: map[string]int{},
		ioErrs: map[int]int{}, dialErrs: map[int]int{},
	}
	l.gen = make([]atomic.Int64, len(limiterFamilies)*l.groups)
	if l.groups > 1 {
		l.units = groupedCapacity
	}
	w := 0
	for _, i := range nodes {
		for k := 0; k < perNode; k++ {
			l.wg.Add(1)
			go l.worker(i, c.nodes[i].addr(), w%l.groups)
			w++
		}
	}
	t.Cleanup(l.halt)
	return l
}

func (l *decisionLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// pause waits d unless the load stops first.
func (l *decisionLoad) pause(d time.Duration) {
	select {
	case <-l.stop:
	case <-time.After(d):
	}
}

// Each family has a key in use in each group: number gen of family fi in
// group g is prefix:tag:gen moved into g by spreadKey (prefix:tag:gen
// itself with one group). Names stay distinct across groups, since a name
// has one slot.
func (l *decisionLoad) key(fi, g int, gen int64) string {
	return spreadKey(l.prefix+":"+limiterFamilies[fi].tag+":"+itoa(gen), g, l.groups)
}

// genIndex is where family fi's key in use in group g is counted.
func (l *decisionLoad) genIndex(fi, g int) int { return fi*l.groups + g }

// worker sends calls to addr, on the keys of group (with one group, every
// key) only, one family after another.
func (l *decisionLoad) worker(node int, addr string, group int) {
	defer l.wg.Done()
	var c *respConn
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	for n := 0; !l.stopped(); n++ {
		if c == nil {
			nc, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
			if err != nil {
				l.mu.Lock()
				l.dialErrs[node]++
				l.mu.Unlock()
				l.pause(50 * time.Millisecond)
				continue
			}
			c = newRESPConn(nc)
		}
		fi := n % len(limiterFamilies)
		fam := limiterFamilies[fi]
		gi := l.genIndex(fi, group)
		gen := l.gen[gi].Load()
		key := l.key(fi, group, gen)
		sent := time.Now()
		r, err := c.doWithin(l.readTimeout, fam.call(key, l.units)...)
		r = fam.decode(r, l.units, false)
		at := time.Now()
		l.mu.Lock()
		switch {
		case err != nil:
			l.failures = append(l.failures, failureEvent{node, sent, at, err.Error()})
			l.ioErrs[node]++
			l.unknown[key]++
			c.close()
			c = nil
		case r.isErr():
			l.failures = append(l.failures, failureEvent{node, sent, at, "-" + r.str})
			l.errs.add(r.str)
			switch {
			case !isFailoverError(r.str):
				l.bad = append(l.bad, fmt.Sprintf("node %d, %s: unexpected error -%s", node, key, r.str))
			case strings.Contains(r.str, "may or may not"):
				l.unknown[key]++
			default:
				l.failed[key]++
			}
		default:
			v, ok := r.ints()
			switch {
			case ok && len(v) == 5 && v[0] == 0 && v[1] == l.units && v[2] >= 0 && v[2] < l.units && v[3] == -1:
				l.allowed[key] = append(l.allowed[key], v[2])
				l.successes = append(l.successes, decisionEvent{node: node, group: group, sent: sent, at: at})
			case ok && len(v) == 5 && v[0] == 1 && v[1] == l.units && v[2] == 0 && v[3] > 0:
				l.limited[key]++
				l.gen[gi].CompareAndSwap(gen, gen+1) // used up: on to the next key
				l.successes = append(l.successes, decisionEvent{node: node, group: group, sent: sent, at: at})
			default:
				l.bad = append(l.bad, fmt.Sprintf("node %d, %s: malformed reply %v", node, key, r))
			}
		}
		l.mu.Unlock()
		if err == nil && r.isErr() {
			l.pause(10 * time.Millisecond) // no busy loop on a refusing node
		}
	}
}

// halt stops the workers and waits for them (each ends its request first,
// which readTimeout bounds).
func (l *decisionLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// events returns the successful replies sorted by arrival.
func (l *decisionLoad) events() []decisionEvent {
	l.mu.Lock()
	ev := append([]decisionEvent(nil), l.successes...)
	l.mu.Unlock()
	sort.Slice(ev, func(i, j int) bool { return ev[i].at.Before(ev[j].at) })
	return ev
}

// describeFailures lists the failed requests relative to origin, for logs.
func (l *decisionLoad) describeFailures(c *cluster, origin time.Time, max int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for i, f := range l.failures {
		if i == max {
			fmt.Fprintf(&b, "\n\t… and %d more", len(l.failures)-i)
			break
		}
		fmt.Fprintf(&b, "\n\tclient on %s: sent %+v, answered %+v: %s", c.nodes[f.node].id,
			f.sent.Sub(origin).Round(time.Millisecond), f.at.Sub(origin).Round(time.Millisecond), f.what)
	}
	return b.String()
}

// longestGap is the longest time within [from, to] without a successful
// reply anywhere, and where it started.
func (l *decisionLoad) longestGap(from, to time.Time) (gap time.Duration, at time.Time) {
	return l.longestGapOf(-1, from, to)
}

// longestGapOf is longestGap counting only the replies on keys of group g
// (every group when g < 0).
func (l *decisionLoad) longestGapOf(g int, from, to time.Time) (gap time.Duration, at time.Time) {
	prev := from
	for _, e := range l.events() {
		if e.at.Before(from) || g >= 0 && e.group != g {
			continue
		}
		if e.at.After(to) {
			break
		}
		if d := e.at.Sub(prev); d > gap {
			gap, at = d, prev
		}
		prev = e.at
	}
	if d := to.Sub(prev); d > gap {
		gap, at = to.Sub(prev), prev
	}
	return gap, at
}

// totals are counts for the logs.
func (l *decisionLoad) totals() (allowed, limited, unknown, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.allowed {
		allowed += len(v)
	}
	for _, v := range l.limited {
		limited += v
	}
	for _, v := range l.unknown {
		unknown += v
	}
	for _, v := range l.failed {
		failed += v
	}
	return
}

// verify checks the replies and then the state the cluster holds, read
// through node via (after the load halted):
//
//   - every reply was a decision or a TRYAGAIN/CLUSTERDOWN error;
//   - per key, at most 100 allowed replies, and their remaining values all
//     distinct (each allowed decision took a different unit);
//   - per key, the units taken (CL.PEEK) are at least the acknowledged
//     allowed decisions (none lost in a failover) and at most those plus the
//     requests whose outcome is unknown (an error that says nothing happened
//     did not happen).
//
// It returns how many keys of each family (by tag) were used up.
func (l *decisionLoad) verify(t testing.TB, c *cluster, via int) (exhausted map[string]int) {
	exhausted = map[string]int{}
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, b := range l.bad {
		if i == 10 {
			t.Errorf("… and %d more unexpected replies", len(l.bad)-i)
			break
		}
		t.Error(b)
	}
	keys := map[string]bool{}
	for k := range l.allowed {
		keys[k] = true
	}
	for k := range l.limited {
		keys[k] = true
	}
	for k := range l.unknown {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		rem := l.allowed[k]
		if int64(len(rem)) > l.units {
			t.Errorf("key %s: %d allowed replies, the limit is %d", k, len(rem), l.units)
		}
		seen := map[int64]int{}
		for _, v := range rem {
			seen[v]++
		}
		for v, n := range seen {
			if n > 1 {
				t.Errorf("key %s: remaining %d was answered to %d allowed calls: one unit was given twice", k, v, n)
			}
		}
	}
	// The state, read linearizably (pipelined PEEKs on one connection).
	rc, err := net.DialTimeout("tcp", c.nodes[via].addr(), probeTimeout)
	if err != nil {
		t.Fatal(err)
	}
	conn := newRESPConn(rc)
	defer conn.close()
	for _, k := range sorted {
		conn.send(familyOfKey(k).peek(k, l.units)...)
	}
	if err := conn.flush(); err != nil {
		t.Fatal(err)
	}
	for _, k := range sorted {
		r, err := conn.read()
		if err != nil {
			t.Fatalf("PEEK %s: %v", k, err)
		}
		r = familyOfKey(k).decode(r, l.units, true)
		v, ok := r.ints()
		if !ok || len(v) != 5 || v[1] != l.units {
			t.Errorf("PEEK %s: got %v", k, r)
			continue
		}
		taken := l.units
		if v[0] == 0 {
			taken = l.units - 1 - v[2]
		}
		if taken == l.units {
			exhausted[familyOfKey(k).tag]++
		}
		acked, unknown := int64(len(l.allowed[k])), int64(l.unknown[k])
		switch {
		case taken < acked:
			t.Errorf("key %s: %d units taken, but %d allowed decisions were acknowledged: %d acknowledged decisions lost",
				k, taken, acked, acked-taken)
		case taken > acked+unknown:
			t.Errorf("key %s: %d units taken, but only %d were acknowledged and %d had an unknown outcome (%d error replies said nothing happened)",
				k, taken, acked, unknown, l.failed[k])
		}
	}
	return exhausted
}

// durOrNone renders a measured duration for logs; negative means never.
func durOrNone(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}
