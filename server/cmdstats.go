package server

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// The per-command figures of INFO commandstats and latencystats, the
// error counts of INFO errorstats, and the feeds of the slow log and the
// latency monitor (slowlog.go, latency.go), as Redis 7.0 keeps them.
//
// What "usec" means here. Redis times a command's call(): it runs
// alone on its main thread. A Redcell connection answers a pipeline's
// writes together (conn.go's pending run: one Propose, one log entry, one
// commit), so a command's time is from its dispatch (exec) until its
// result is ready to write: for a write, the commit of the run's entry and
// the apply; for a read, the leadership check and the read; for a
// connection command, its handler. Commands of one run share the wait
// for the run, so their times overlap and their sum may exceed the wall
// time. Inside MULTI a queued command is counted when EXEC runs it, with
// EXEC's time so far (its transaction is one entry).
//
// A command's dispatch is read from a clock reading that is still current
// (cmdTiming.clock): the pipeline's read, or the end of the last command
// that was answered or ran its handler. A command that only joins the
// pending run blocks on nothing, so the next one's dispatch is the same
// instant within its parsing (well under a microsecond); a pipeline of
// writes then costs two clock reads, its read and its answer, not two per
// command. Recording costs, per command, a few atomic adds on its Spec's
// slot (commands.Spec.ID indexes the array): no map lookup, no lock, no
// allocation after a command's first latency allocates its histogram.

// commandStats are one command's (or subcommand's) figures. Any goroutine.
type commandStats struct {
	calls, ns, rejected, failed atomic.Int64
	hist                        atomic.Pointer[latencyHistogram] // nil until its first latency
}

// diagnostics are the server's command figures, error counts, slow log
// and latency monitor.
type diagnostics struct {
	cmds []commandStats // by commands.Spec.ID
	errs errorStats
	slow slowLog
	lat  latencyMonitor
	mem  memPeak // MEMORY STATS's peak and startup figures (memory.go)
	// tracking is CONFIG's latency-tracking: per-command histograms.
	tracking atomic.Bool
}

func (d *diagnostics) init() {
	d.cmds = make([]commandStats, commands.NumSpecs())
	d.slow.init()
	d.tracking.Store(true)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	d.mem.startup.Store(int64(ms.HeapAlloc))
}

// resetStats is CONFIG RESETSTAT's part: the command figures and error
// counts (not the slow log nor the latency events, as in Redis).
func (d *diagnostics) resetStats() {
	for i := range d.cmds {
		st := &d.cmds[i]
		st.calls.Store(0)
		st.ns.Store(0)
		st.rejected.Store(0)
		st.failed.Store(0)
		st.hist.Store(nil)
	}
	d.errs.reset()
}

// monoStart is the origin of monoNow.
var monoStart = time.Now()

// monoNow is the monotonic clock in nanoseconds.
func monoNow() int64 { return int64(time.Since(monoStart)) }

// cmdTiming is a connection's record of the command exec is running and of
// the commands waiting in its pending run. Only the connection's goroutine
// touches it.
type cmdTiming struct {
	spec     *commands.Spec // the command being run; nil: unknown
	start    int64          // its dispatch (monoNow)
	clock    int64          // a monoNow reading nothing has blocked since; 0: none
	rejected bool           // refused before running (conn.reject)
	errors   int64          // error replies written by this connection
	errBase  int64          // errors before the command (or the run last answered)
	queued   int            // MULTI's queue before the command
	pend     []pendingCmd   // the pending run's commands, in order
}

// pendingCmd is a command in the connection's pending run; args alias the
// read buffer, valid until the run is answered (before the next read).
type pendingCmd struct {
	spec  *commands.Spec
	args  [][]byte
	start int64
}

// beginStats notes the dispatch of a command (conn.exec).
func (c *conn) beginStats() {
	c.stat.spec, c.stat.rejected = nil, false
	c.stat.errBase = c.stat.errors
	c.stat.queued = len(c.tx.items)
	c.stat.start = c.stat.clock
	if c.stat.start == 0 {
		c.stat.start = monoNow()
	}
}

// tick reads the monotonic clock after something that may have blocked
// (a command's handler, the pending run's answer) and keeps the reading for
// the next command's dispatch.
func (c *conn) tick() int64 {
	c.stat.clock = monoNow()
	return c.stat.clock
}

// endStats records the command exec ran: now if it was answered, when its
// run is answered if it joined the pending run, when EXEC runs it if
// MULTI queued it. An unknown command or subcommand counts only in
// errorstats, as in Redis.
func (c *conn) endStats(args [][]byte) {
	spec := c.stat.spec
	if spec == nil {
		return
	}
	if !c.stat.rejected {
		if len(c.writes)+len(c.reads) > len(c.stat.pend) {
			c.stat.pend = append(c.stat.pend, pendingCmd{spec: spec, args: args, start: c.stat.start})
			return
		}
		if c.tx.active && !runsInsideMulti(spec) {
			if n := len(c.tx.items); n > c.stat.queued && c.s.diag.slow.slowerThan.Load() >= 0 {
				c.tx.items[n-1].logged = slowArgs(spec, args) // the read buffer is reused before EXEC
			}
			return
		}
	}
	spec, rejected := statSpec(spec, args, c.stat.rejected)
	if spec == nil {
		return
	}
	st := &c.s.diag.cmds[spec.ID]
	if rejected {
		st.rejected.Add(1)
		return
	}
	c.s.diag.record(c, spec, args, c.tick()-c.stat.start, c.stat.errors != c.stat.errBase)
}

// statSpec is the spec a command's figures belong to: a container's
// subcommand (cmdstat_client|list), nil for an unknown one; and whether it
// was refused before running (a subcommand's wrong arity, which the
// container's handler answers here and Redis before the call).
func statSpec(spec *commands.Spec, args [][]byte, rejected bool) (*commands.Spec, bool) {
	if len(spec.Subs) == 0 || len(args) < 2 {
		return spec, rejected
	}
	sub := spec.Sub(args[1])
	if sub == nil {
		return nil, false
	}
	return sub, rejected || !sub.CheckArity(len(args))
}

// recordRun records the commands of the pending run answered now with
// res (err: the whole run failed) (conn.answer).
//
// Commands of one pipeline that share their spec, dispatch and outcome (a
// pipeline of CL.THROTTLE) took the same time, and are counted with one
// add to each figure (countN), not one per command; the slow log, which
// needs each one's arguments, sees them one by one only if that time is
// slow enough for it.
func (c *conn) recordRun(res []request.Result, err error) {
	now := c.tick()
	pend := c.stat.pend
	failedAt := func(i int) bool { return err != nil || i >= len(res) || res[i].Kind == request.KindError }
	for i := 0; i < len(pend); {
		p := &pend[i]
		failed := failedAt(i)
		j := i + 1
		for j < len(pend) && pend[j].spec == p.spec && pend[j].start == p.start && failedAt(j) == failed {
			j++
		}
		ns := now - p.start
		c.s.diag.countN(p.spec, ns, failed, j-i)
		if c.s.diag.slow.slow(p.spec, ns) {
			for k := i; k < j; k++ {
				c.s.diag.slow.add(c, slowArgs(p.spec, pend[k].args), ns)
			}
		}
		c.s.diag.lat.offer(p.spec, ns) // one sample: the monitor keeps a second's highest
		i = j
	}
	clear(pend)
	c.stat.pend = pend[:0]
	c.stat.errBase = c.stat.errors // the run's errors are not the next command's
}

// recordTransaction records the commands EXEC ran, each with EXEC's time
// so far (the transaction is one log entry); the slow log gets each of
// them and not EXEC (flagged skip_slowlog), as in Redis.
func (c *conn) recordTransaction(items []txItem, res []request.Result) {
	ns := c.tick() - c.stat.start
	for i := range items {
		it := &items[i]
		spec, _ := statSpec(it.spec, it.args, false)
		if spec == nil {
			continue
		}
		failed := it.err != "" || it.req >= 0 && it.req < len(res) && res[it.req].Kind == request.KindError
		c.s.diag.count(spec, ns, failed)
		if it.logged != nil {
			c.s.diag.slow.offerLogged(c, spec, it.logged, ns)
		}
		c.s.diag.lat.offer(spec, ns)
	}
	// Their errors are theirs, not EXEC's: Redis counts a nested call's
	// error once, for the command that answered it.
	c.stat.errBase = c.stat.errors
}

// noteError counts an error reply (conn.fail): total_error_replies, its
// prefix in errorstats, and this connection's count, which tells whether
// the command failed.
func (c *conn) noteError(text string) {
	c.s.stats.errors.Add(1)
	if c.s.diag.errs.count(text) {
		c.s.log.Warn("errorstats stopped adding new errors: the number of error prefixes reached the limit; CONFIG RESETSTAT re-enables it",
			"limit", maxErrorPrefixes)
	}
	c.stat.errors++
}

// record counts one run of spec that took ns, and hands it to the slow log
// and the latency monitor.
func (d *diagnostics) record(c *conn, spec *commands.Spec, args [][]byte, ns int64, failed bool) {
	d.count(spec, ns, failed)
	d.slow.offer(c, spec, args, ns)
	d.lat.offer(spec, ns)
}

// count adds one call of spec that took ns to its figures.
func (d *diagnostics) count(spec *commands.Spec, ns int64, failed bool) {
	d.countN(spec, ns, failed, 1)
}

// countN adds n calls of spec that each took ns to its figures.
func (d *diagnostics) countN(spec *commands.Spec, ns int64, failed bool, n int) {
	st := &d.cmds[spec.ID]
	st.calls.Add(int64(n))
	st.ns.Add(ns * int64(n))
	if failed {
		st.failed.Add(int64(n))
	}
	if !d.tracking.Load() {
		return
	}
	h := st.hist.Load()
	if h == nil {
		st.hist.CompareAndSwap(nil, new(latencyHistogram))
		h = st.hist.Load()
	}
	h.recordN(ns, n)
}

// forEachSpec calls fn for every command and subcommand, sorted by name
// with a container's subcommands after it. Redis lists them in its hash
// table's order, which no client can rely on.
func forEachSpec(fn func(*commands.Spec)) {
	for _, s := range commands.All() {
		fn(s)
		subs := append([]*commands.Spec(nil), s.Subs...)
		sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
		for _, sub := range subs {
			fn(sub)
		}
	}
}

// writeCommandStats writes INFO commandstats' lines: the commands called,
// refused or failed at least once, in Redis's format.
func (s *Server) writeCommandStats(b *strings.Builder) {
	forEachSpec(func(spec *commands.Spec) {
		st := &s.diag.cmds[spec.ID]
		calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
		if calls == 0 && rejected == 0 && failed == 0 {
			return
		}
		usec := st.ns.Load() / 1000
		perCall := 0.0
		if calls > 0 {
			perCall = float64(st.ns.Load()) / 1000 / float64(calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			spec.Name, calls, usec, perCall, rejected, failed)
	})
}

// latencyPercentiles are INFO latencystats' percentiles: Redis's default
// latency-tracking-info-percentiles.
var latencyPercentiles = []float64{50, 99, 99.9}

// writeLatencyStats writes INFO latencystats' lines: per command with a
// histogram, its percentiles in microseconds with three decimals.
func (s *Server) writeLatencyStats(b *strings.Builder) {
	if !s.diag.tracking.Load() {
		return
	}
	forEachSpec(func(spec *commands.Spec) {
		h := s.diag.cmds[spec.ID].hist.Load()
		if h == nil {
			return
		}
		counts, total := h.snapshot()
		if total == 0 {
			return
		}
		b.WriteString("latency_percentiles_usec_" + spec.Name + ":")
		for i, p := range latencyPercentiles {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "p%s=%.3f", strconv.FormatFloat(p, 'f', -1, 64), float64(percentile(&counts, total, p))/1000)
		}
		b.WriteString("\r\n")
	})
}

// errorStats counts error replies by their prefix, as Redis's errorstats.
// Errors are not the hot path: a mutex and a map. As Redis 7.2 and later
// guard it (7.0 does not), at most maxErrorPrefixes prefixes: one more
// empties the table, which then counts every error as ERRORSTATS_DISABLED
// until CONFIG RESETSTAT, so that errors whose first word a client chooses
// cannot grow it without bound.
type errorStats struct {
	mu       sync.Mutex
	counts   map[string]int64
	disabled bool
}

// maxErrorPrefixes is Redis's ERROR_STATS_NUMBER.
const maxErrorPrefixes = 128

// errorPrefix is the word that names an error in errorstats, as Redis's
// afterErrorReply takes it: up to the first space within the first 32
// bytes of the reply ("-" and text), "ERR" when there is none.
func errorPrefix(text string) string {
	limit := min(len(text), 31)
	if i := strings.IndexByte(text[:limit], ' '); i > 0 {
		return text[:i]
	}
	return "ERR"
}

// count counts one error reply; true when this one disabled the table.
func (e *errorStats) count(text string) (disabledNow bool) {
	p := errorPrefix(text)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.disabled {
		return false
	}
	if e.counts == nil {
		e.counts = map[string]int64{}
	}
	if _, ok := e.counts[p]; !ok {
		if len(e.counts) >= maxErrorPrefixes {
			e.counts = map[string]int64{"ERRORSTATS_DISABLED": 1}
			e.disabled = true
			return true
		}
		p = strings.Clone(p) // a new key must not keep the whole text alive
	}
	e.counts[p]++
	return false
}

func (e *errorStats) reset() {
	e.mu.Lock()
	e.counts, e.disabled = nil, false
	e.mu.Unlock()
}

// write writes INFO errorstats' lines, sorted by prefix as Redis's radix
// tree iterates them.
func (e *errorStats) write(b *strings.Builder) {
	e.mu.Lock()
	names := make([]string, 0, len(e.counts))
	for n := range e.counts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", infoSafe(n), e.counts[n])
	}
	e.mu.Unlock()
}

// infoSafe replaces the characters that would break INFO's format, as
// Redis's getSafeInfoString does.
func infoSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '#', ':', '\n', '\r':
			return '_'
		}
		return r
	}, s)
}
