package server

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/commands"
)

// latencyMonitor is Redis's latency monitor: per event, one sample a second
// (the highest latency in milliseconds seen in that second), the latest
// latencyHistoryLen of them, and the highest ever. Redcell's events are
// Redis's two for commands, by the table's "fast" flag: "command" and
// "fast-command", a command's time being cmdstats.go's (from dispatch to
// reply, a write's commit included; so a slow disk shows there). Redis's
// fork, AOF and expire events have no counterpart here; the log's fsyncs
// happen in the group, below the server's Backend, and have their own
// figures (INFO raft, the metrics). Off while latency-monitor-threshold is
// 0, its default.
type latencyMonitor struct {
	threshold atomic.Int64 // ms; 0: off (CONFIG latency-monitor-threshold)

	mu     sync.Mutex
	events map[string]*latencySeries
}

// latencyHistoryLen is Redis's LATENCY_TS_LEN.
const latencyHistoryLen = 160

type latencySample struct{ unix, ms int64 }

// latencySeries is one event's samples, a ring: next is where the next
// second's sample goes.
type latencySeries struct {
	samples [latencyHistoryLen]latencySample
	next    int
	max     int64
}

// offer adds a command's latency of ns to its event if it reached the
// threshold. Any connection goroutine; only a slow command takes the lock.
func (m *latencyMonitor) offer(spec *commands.Spec, ns int64) {
	limit := m.threshold.Load()
	ms := ns / int64(time.Millisecond)
	if limit == 0 || ms < limit {
		return
	}
	event := "command"
	if spec.HasFlag("fast") {
		event = "fast-command"
	}
	m.add(event, ms, time.Now().Unix())
}

// add is Redis's latencyAddSample: a second's sample keeps its highest
// latency.
func (m *latencyMonitor) add(event string, ms, unix int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencySeries{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := &ts.samples[(ts.next+latencyHistoryLen-1)%latencyHistoryLen]
	if prev.unix == unix {
		prev.ms = max(prev.ms, ms)
		return
	}
	ts.samples[ts.next] = latencySample{unix: unix, ms: ms}
	ts.next = (ts.next + 1) % latencyHistoryLen
}

// history is an event's samples, oldest first; nil for an unknown event.
func (ts *latencySeries) history() []latencySample {
	var out []latencySample
	for j := 0; j < latencyHistoryLen; j++ {
		if s := ts.samples[(ts.next+j)%latencyHistoryLen]; s.unix != 0 {
			out = append(out, s)
		}
	}
	return out
}

// eventNames are the events with samples, sorted (Redis lists them in its
// hash table's order).
func (m *latencyMonitor) eventNames() []string {
	names := make([]string, 0, len(m.events))
	for n := range m.events {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LATENCY <LATEST | HISTORY event | RESET [event ...] | DOCTOR | GRAPH event | HISTOGRAM [command ...] | HELP>
// Reads the latency monitor's events (command, fast-command) and the
// per-command latency histograms.
func cmdLatency(c *conn, s *commands.Spec, args [][]byte) {
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "LATENCY"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	m := &c.s.diag.lat
	switch sub.Name {
	case "latency|help":
		writeHelp(c, "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR",
			"    Return a human readable latency analysis report.",
			"GRAPH <event>",
			"    Return an ASCII latency graph for the <event> class.",
			"HISTORY <event>",
			"    Return time-latency samples for the <event> class.",
			"LATEST",
			"    Return the latest latency samples for all events.",
			"RESET [<event> ...]",
			"    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]",
			"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.",
			"HELP",
			"    Prints this help.")
	case "latency|latest":
		m.mu.Lock()
		names := m.eventNames()
		c.w.Array(len(names))
		for _, n := range names {
			ts := m.events[n]
			last := ts.samples[(ts.next+latencyHistoryLen-1)%latencyHistoryLen]
			c.w.Array(4)
			c.w.BulkString(n)
			c.w.Int(last.unix)
			c.w.Int(last.ms)
			c.w.Int(ts.max)
		}
		m.mu.Unlock()
	case "latency|history":
		m.mu.Lock()
		var samples []latencySample
		if ts := m.events[string(args[2])]; ts != nil {
			samples = ts.history()
		}
		m.mu.Unlock()
		c.w.Array(len(samples))
		for _, s := range samples {
			c.w.Array(2)
			c.w.Int(s.unix)
			c.w.Int(s.ms)
		}
	case "latency|reset":
		m.mu.Lock()
		n := 0
		if len(args) == 2 {
			n = len(m.events)
			m.events = nil
		}
		for _, e := range args[2:] {
			if _, ok := m.events[string(e)]; ok {
				delete(m.events, string(e))
				n++
			}
		}
		m.mu.Unlock()
		c.w.Int(int64(n))
	case "latency|graph":
		m.mu.Lock()
		ts := m.events[string(args[2])]
		var graph string
		if ts != nil {
			graph = latencyGraph(string(args[2]), ts, time.Now().Unix())
		}
		m.mu.Unlock()
		if ts == nil {
			c.fail("ERR No samples available for event '" + string(args[2]) + "'")
			return
		}
		c.w.Verbatim(graph)
	case "latency|doctor":
		c.w.Verbatim(c.s.latencyReport())
	case "latency|histogram":
		latencyHistogramReply(c, args[2:])
	}
}

// latencyGraph is LATENCY GRAPH's text: Redis's header and rule, then one
// line per sample (its age and a bar scaled to the highest), a plainer
// chart than Redis's four-row sparkline.
func latencyGraph(event string, ts *latencySeries, now int64) string {
	samples := ts.history()
	var lo, hi int64
	for i, s := range samples {
		if i == 0 || s.ms < lo {
			lo = s.ms
		}
		hi = max(hi, s.ms)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, ts.max)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	for _, s := range samples {
		bar := 1
		if hi > 0 {
			bar = max(1, int(s.ms*60/hi))
		}
		fmt.Fprintf(&b, "%6s %s %d ms\n", ageLabel(now-s.unix), strings.Repeat("#", bar), s.ms)
	}
	return b.String()
}

// ageLabel is Redis's sparkline label: seconds, minutes, hours or days ago.
func ageLabel(elapsed int64) string {
	switch {
	case elapsed < 60:
		return fmt.Sprintf("%ds", elapsed)
	case elapsed < 3600:
		return fmt.Sprintf("%dm", elapsed/60)
	case elapsed < 3600*24:
		return fmt.Sprintf("%dh", elapsed/3600)
	}
	return fmt.Sprintf("%dd", elapsed/(3600*24))
}

// latencyReport is LATENCY DOCTOR's text, with Redis's sentences: monitoring
// off and never on; no spike; or each event's spikes (count, average, mean
// deviation, period, worst).
func (s *Server) latencyReport() string {
	m := &s.diag.lat
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 && m.threshold.Load() == 0 {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	if len(m.events) == 0 {
		return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
	for i, n := range m.eventNames() {
		ts := m.events[n]
		samples := ts.history()
		var sum, mad int64
		for _, x := range samples {
			sum += x.ms
		}
		avg := sum / int64(len(samples))
		for _, x := range samples {
			mad += max(x.ms-avg, avg-x.ms)
		}
		mad /= int64(len(samples))
		period := samples[len(samples)-1].unix - samples[0].unix
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.\n",
			i+1, n, len(samples), avg, mad, float64(period)/float64(len(samples)), ts.max)
	}
	b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
	return b.String()
}

// latencyHistogramReply is LATENCY HISTOGRAM [command ...]: a map of each
// command with a histogram (all, or the named ones and their subcommands;
// unknown names are skipped) to its calls and cumulative buckets.
func latencyHistogramReply(c *conn, names [][]byte) {
	var specs []*commands.Spec
	if len(names) == 0 {
		forEachSpec(func(s *commands.Spec) { specs = append(specs, s) })
	}
	var scratch []byte
	for _, n := range names {
		name, sub, isSub := bytes.Cut(n, []byte("|")) // "client|list", as Redis looks names up
		s := commands.Lookup(name, &scratch)
		if s != nil && isSub {
			s = s.Sub(sub)
		}
		if s == nil {
			continue
		}
		specs = append(specs, s)
		specs = append(specs, s.Subs...)
	}
	type row struct {
		name   string
		counts [histBuckets]uint64
		total  uint64
	}
	var rows []*row
	for _, s := range specs {
		h := c.s.diag.cmds[s.ID].hist.Load()
		if h == nil {
			continue
		}
		r := &row{name: s.Name}
		r.counts, r.total = h.snapshot()
		if r.total > 0 {
			rows = append(rows, r)
		}
	}
	c.w.MapHeader(len(rows))
	for _, r := range rows {
		c.w.BulkString(r.name)
		c.w.MapHeader(2)
		c.w.BulkString("calls")
		c.w.Int(int64(r.total))
		c.w.BulkString("histogram_usec")
		var buckets [][2]int64
		cumulative(&r.counts, r.total, func(usec int64, n uint64) { buckets = append(buckets, [2]int64{usec, int64(n)}) })
		c.w.MapHeader(len(buckets))
		for _, bk := range buckets {
			c.w.Int(bk[0])
			c.w.Int(bk[1])
		}
	}
}
