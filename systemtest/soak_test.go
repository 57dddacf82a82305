package systemtest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soakFor overrides the soak's length: -soak 10m, or REDCELL_SOAK=10m in the
// environment (the flag wins). The suite's default is soakDefault.
var soakFor = flag.Duration("soak", 0, "length of TestSoak (default 75s, 20s with -short; also REDCELL_SOAK)")

const (
	soakDefault      = 75 * time.Second
	soakShort        = 20 * time.Second
	soakSampleEvery  = time.Second
	soakSnapshotEach = 3 * time.Second
)

// soakDuration is the soak's length from -soak, REDCELL_SOAK or the default.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	if *soakFor > 0 {
		return *soakFor
	}
	if s := os.Getenv("REDCELL_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("REDCELL_SOAK=%q: want a positive Go duration such as 10m", s)
		}
		return d
	}
	if testing.Short() {
		return soakShort
	}
	return soakDefault
}

// soakCommands are the limiter calls of the soak, one per family and
// variant, each on its own key prefix (a prefix never changes family, so no
// WRONGTYPE). Every key lives at most half a second after its last write,
// so keys expire continuously while new ones appear.
var soakCommands = []struct {
	prefix string
	args   []string // after the key
	cmd    string
}{
	{"cl", []string{"4", "10", "1", "1"}, "CL.THROTTLE"},      // burst 5, 10/s: TAT ≤ now+0.5 s
	{"tb", []string{"5", "10", "1000"}, "TB.TAKE"},            // full again ≤ 0.5 s
	{"tbi", []string{"5", "5", "250", "INTERVAL"}, "TB.TAKE"}, // refilled ≤ 0.25 s
	{"sl", []string{"5", "500"}, "SL.HIT"},                    // 0.5 s window
	{"slc", []string{"3", "300", "DENIED", "COUNT"}, "SL.HIT"},
}

// soakKey picks a key: a generation that changes every 2 s (so the
// keyspace churns: old generations expire, new keys are created) and one of
// 1,000 names in it (few enough that some calls are limited).
func soakKey(rng *rand.Rand, start time.Time) (string, []string) {
	c := soakCommands[rng.IntN(len(soakCommands))]
	gen := int64(time.Since(start) / (2 * time.Second))
	key := "soak:" + c.prefix + ":" + strconv.FormatInt(gen, 10) + ":" + strconv.Itoa(rng.IntN(1000))
	return key, append([]string{c.cmd, key}, c.args...)
}

// soakSample is the node's state at one moment of the soak.
type soakSample struct {
	at         time.Duration
	rss        int64 // VmRSS, bytes
	usedMemory int64 // INFO memory used_memory (Go heap in use)
	goroutines int64 // INFO server goroutines
	clients    int64 // INFO clients connected_clients
	keys       int64 // DBSIZE
	snapIndex  int64 // INFO raft raft_last_snapshot_index
}

// latencies collects request latencies of one kind, split at the soak's
// half. Workers append under mu.
type latencies struct {
	mu    sync.Mutex
	halfs [2][]time.Duration
}

func (l *latencies) add(half int, d time.Duration) {
	l.mu.Lock()
	l.halfs[half] = append(l.halfs[half], d)
	l.mu.Unlock()
}

// summary is "n, p50, p99, max" of one half.
func (l *latencies) summary(half int) string {
	l.mu.Lock()
	ds := slices.Clone(l.halfs[half])
	l.mu.Unlock()
	if len(ds) == 0 {
		return "none"
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", len(ds), q(0.50).Round(time.Microsecond), q(0.99).Round(time.Microsecond), ds[len(ds)-1].Round(time.Microsecond))
}

// TestSoak: a node under key churn (every limiter family, keys living half a
// second, a new generation of names every 2 s), clients that connect, work a
// while and leave, pipelined and one-at-a-time, and a Raft snapshot every
// few seconds (RAFT SNAPSHOT, plus the node's own by a low threshold). Every
// reply must be a decision. Once a second it samples RSS
// (/proc/PID/status), INFO used_memory, goroutines, connected_clients,
// DBSIZE and the last snapshot's index. Then:
//
//   - memory, goroutines and keys level off: the second half's maximum is
//     within a bound of the first half's (levelsOff; generous for GC and
//     Pebble's caches, but a steady leak over the soak exceeds it);
//   - snapshots were taken all along;
//   - once the load stops, every key expires (DBSIZE 0) and the goroutines
//     return to within a few of the idle count before the load: nothing
//     lingers per connection;
//   - the node stops on SIGTERM with exit code 0.
//
// p50/p99/max latency of one-at-a-time requests and of pipelines of 32
// (write to last reply) are logged per half. Length: 75 s, 20 s with
// -short, longer with -soak 10m or REDCELL_SOAK=10m.
func TestSoak(t *testing.T) {
	t.Parallel()
	length := soakDuration(t)
	n := startTestNode(t, "soak", "--snapshot-threshold", "4096", "--snapshot-interval", "1s")
	ctl := mustDial(t, n.addr())
	idleGoroutines := infoInt(t, ctl, "server", "goroutines")
	t.Logf("soak for %v; idle: %d goroutines", length, idleGoroutines)

	start := time.Now()
	deadline := start.Add(length)
	half := func() int {
		if time.Since(start) < length/2 {
			return 0
		}
		return 1
	}
	var (
		wg        sync.WaitGroup
		failed    atomic.Value // first worker error (string)
		requests  atomic.Int64
		limited   atomic.Int64
		conns     atomic.Int64
		single    latencies
		pipelined latencies
	)
	fail := func(format string, args ...any) {
		failed.CompareAndSwap(nil, fmt.Sprintf(format, args...))
	}
	running := func() bool { return time.Now().Before(deadline) && failed.Load() == nil }
	check := func(r reply, cmd []string) bool {
		v, ok := r.ints()
		if !ok || len(v) != 5 {
			fail("%s answered %v, want a decision", quoteArgs(cmd), r)
			return false
		}
		if v[0] == 1 {
			limited.Add(1)
		}
		requests.Add(1)
		return true
	}

	// Pipelined clients: connect, send 20–200 pipelines of 32 mixed calls,
	// leave.
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for running() {
				c, err := dialRESP(n.addr())
				if err != nil {
					fail("pipelined client %d: %v", w, err)
					return
				}
				conns.Add(1)
				for range 20 + rng.IntN(180) {
					if !running() {
						break
					}
					cmds := make([][]string, 32)
					for i := range cmds {
						_, cmds[i] = soakKey(rng, start)
						c.send(cmds[i]...)
					}
					t0 := time.Now()
					if err := c.flush(); err != nil {
						fail("pipelined client %d: %v", w, err)
						break
					}
					for i := range cmds {
						r, err := c.read()
						if err != nil {
							fail("pipelined client %d: %v", w, err)
							break
						}
						if !check(r, cmds[i]) {
							break
						}
					}
					pipelined.add(half(), time.Since(t0))
					// Pacing, not synchronisation: leave the shared
					// machine's CPU to the node and the other tests.
					time.Sleep(5 * time.Millisecond)
				}
				c.close()
			}
		}()
	}
	// One-at-a-time clients: connect, make 50–500 calls, leave.
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for running() {
				c, err := dialRESP(n.addr())
				if err != nil {
					fail("client %d: %v", w, err)
					return
				}
				conns.Add(1)
				for range 50 + rng.IntN(450) {
					if !running() {
						break
					}
					_, cmd := soakKey(rng, start)
					t0 := time.Now()
					r, err := c.do(cmd...)
					if err != nil {
						fail("client %d: %s: %v", w, quoteArgs(cmd), err)
						break
					}
					single.add(half(), time.Since(t0))
					if !check(r, cmd) {
						break
					}
				}
				c.close()
			}
		}()
	}
	// Passers-by: connect and leave at once, half of them after one PING,
	// half without a byte sent.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; running(); i++ {
			c, err := dialRESP(n.addr())
			if err != nil {
				fail("passer-by: %v", err)
				return
			}
			conns.Add(1)
			if i%2 == 0 {
				if r, err := c.do("PING"); err != nil || r.str != "PONG" {
					fail("passer-by PING: %v %v", r, err)
				}
			}
			c.close()
			time.Sleep(20 * time.Millisecond) // pacing
		}
	}()

	// The sampler and the snapshots, on the control connection.
	var samples []soakSample
	snapshots, lastSnap := 0, time.Now()
	tick := time.NewTicker(soakSampleEvery)
	for running() {
		<-tick.C
		samples = append(samples, sampleNode(t, n, ctl, time.Since(start)))
		if time.Since(lastSnap) >= soakSnapshotEach {
			lastSnap = time.Now()
			r := mustDo(t, ctl, "RAFT", "SNAPSHOT")
			switch {
			case r.kind == ':' && r.num > 0: // the snapshot's index
				snapshots++
			case r.isErr() && strings.Contains(strings.ToLower(r.str), "nothing new"):
			default:
				t.Errorf("RAFT SNAPSHOT: %v", r)
			}
		}
	}
	tick.Stop()
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		t.Fatal(msg)
	}
	elapsed := time.Since(start)
	t.Logf("%d requests (%.0f/s, %.0f%% limited) over %d connections in %v; %d RAFT SNAPSHOTs",
		requests.Load(), float64(requests.Load())/elapsed.Seconds(), 100*float64(limited.Load())/float64(max(1, requests.Load())), conns.Load(), elapsed.Round(time.Millisecond), snapshots)
	for h, name := range []string{"first half", "second half"} {
		t.Logf("latency, %s: one at a time %s; pipelines of 32 %s", name, single.summary(h), pipelined.summary(h))
	}
	for _, s := range samples {
		t.Logf("  %5.1fs  RSS %6.1f MiB  used_memory %6.1f MiB  goroutines %4d  clients %3d  keys %6d  snapshot index %d",
			s.at.Seconds(), float64(s.rss)/(1<<20), float64(s.usedMemory)/(1<<20), s.goroutines, s.clients, s.keys, s.snapIndex)
	}

	if len(samples) < 6 {
		t.Fatalf("only %d samples in %v", len(samples), length)
	}
	const mib = 1 << 20
	for _, b := range []struct {
		name     string
		value    func(soakSample) int64
		slack    float64 // allowed growth, a fraction of the first half's maximum
		floor    int64   // ... and at least this much
		unitName string
	}{
		{"RSS", func(s soakSample) int64 { return s.rss }, 0.25, 24 * mib, "bytes"},
		{"used_memory", func(s soakSample) int64 { return s.usedMemory }, 0.25, 16 * mib, "bytes"},
		{"goroutines", func(s soakSample) int64 { return s.goroutines }, 0.25, 40, "goroutines"},
		{"keys", func(s soakSample) int64 { return s.keys }, 0.5, 2000, "keys"},
	} {
		series := make([]int64, len(samples))
		for i, s := range samples {
			series[i] = b.value(s)
		}
		if err := levelsOff(series, b.slack, b.floor); err != nil {
			t.Errorf("%s does not level off: %v", b.name, err)
		}
	}
	// Snapshots all along: the last snapshot index moved in each half.
	mid := len(samples) / 2
	if samples[0].snapIndex >= samples[mid-1].snapIndex || samples[mid].snapIndex >= samples[len(samples)-1].snapIndex {
		t.Errorf("snapshot index did not advance in each half: %d → %d → %d → %d",
			samples[0].snapIndex, samples[mid-1].snapIndex, samples[mid].snapIndex, samples[len(samples)-1].snapIndex)
	}

	// Quiet again: every key expires (the longest lives half a second) and
	// the per-connection goroutines are gone. Bounded polls of outcomes
	// that follow from wall time.
	settle := time.Now().Add(10 * time.Second)
	for {
		keys := mustDo(t, ctl, "DBSIZE").num
		g := infoInt(t, ctl, "server", "goroutines")
		if keys == 0 && g <= idleGoroutines+5 {
			t.Logf("after the load: 0 keys, %d goroutines (idle before: %d)", g, idleGoroutines)
			break
		}
		if time.Now().After(settle) {
			t.Fatalf("10 s after the load: DBSIZE %d (want 0: every key expired), %d goroutines (want ≤ %d, the idle count + 5)", keys, g, idleGoroutines+5)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctl.close()
	n.mustStop(t)
}

// sampleNode reads the node's memory, goroutines, clients, keys and last
// snapshot index.
func sampleNode(t *testing.T, n *node, c *respConn, at time.Duration) soakSample {
	t.Helper()
	rss, err := processRSS(n.pid())
	if err != nil {
		t.Fatal(err)
	}
	info := mustDo(t, c, "INFO", "server", "memory", "clients", "raft").str
	field := func(name string) int64 {
		v, err := strconv.ParseInt(infoField(info, name), 10, 64)
		if err != nil {
			t.Fatalf("INFO %s: %v\n%s", name, err, info)
		}
		return v
	}
	return soakSample{
		at: at, rss: rss,
		usedMemory: field("used_memory"),
		goroutines: field("goroutines"),
		clients:    field("connected_clients"),
		keys:       mustDo(t, c, "DBSIZE").num,
		snapIndex:  field("raft_last_snapshot_index"),
	}
}

// infoInt is one integer field of one INFO section.
func infoInt(t *testing.T, c *respConn, section, name string) int64 {
	t.Helper()
	info := mustDo(t, c, "INFO", section).str
	v, err := strconv.ParseInt(infoField(info, name), 10, 64)
	if err != nil {
		t.Fatalf("INFO %s %s: %v\n%s", section, name, err, info)
	}
	return v
}

// processRSS reads VmRSS of pid from /proc/PID/status, in bytes.
func processRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("unexpected VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// levelsOff checks that a series sampled at a steady rate has levelled off:
// the maximum of its second half exceeds the maximum of its first half by at
// most slack × that maximum, or floor, whichever is larger. The first half
// includes the ramp from idle, so its maximum is the plateau a bounded
// process reaches; a quantity that grows steadily for the whole soak ends
// the second half about twice as far above the start as the first half's
// maximum, which a slack below 1 refuses (TestLevelsOff).
func levelsOff(series []int64, slack float64, floor int64) error {
	mid := len(series) / 2
	first, second := slices.Max(series[:mid]), slices.Max(series[mid:])
	allowed := max(int64(slack*float64(first)), floor)
	if second-first > allowed {
		return fmt.Errorf("first half's maximum %d, second half's %d: grew by %d, allowed %d", first, second, second-first, allowed)
	}
	return nil
}

// TestLevelsOff: the soak's bound accepts a plateau with noise and a
// ramp-up, and refuses steady growth of the kind a leak makes at the scale
// of the soak's figures.
func TestLevelsOff(t *testing.T) {
	const mib = 1 << 20
	plateau := make([]int64, 75)
	leak := make([]int64, 75)
	for i := range plateau {
		plateau[i] = 60*mib + int64(i%7)*3*mib // GC's saw-tooth
		if i < 5 {
			plateau[i] = int64(20+8*i) * mib // the ramp from idle
		}
		leak[i] = 40*mib + int64(i)*mib // +1 MiB/s for the whole soak
	}
	if err := levelsOff(plateau, 0.25, 24*mib); err != nil {
		t.Errorf("plateau refused: %v", err)
	}
	if err := levelsOff(leak, 0.25, 24*mib); err == nil {
		t.Errorf("+1 MiB/s for 75 s accepted")
	}
	goroutines := []int64{30, 45, 44, 46, 45, 80, 75, 79, 81, 85, 90, 95, 100, 110, 120, 130}
	if err := levelsOff(goroutines, 0.25, 40); err == nil {
		t.Errorf("goroutines growing by 10 a second accepted")
	}
}
