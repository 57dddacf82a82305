package systemtest

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The diagnostics operators reach for first — INFO cpu, commandstats,
// errorstats, latencystats, SLOWLOG, LATENCY, MEMORY — compared with
// redis-server 7.0.15: help texts, error texts and everything
// deterministic byte for byte (RESP type bytes included), and the shapes
// (field names, their order, formats) where values are the server's own
// (times, byte counts). Deliberate differences, each also said where it
// is made: Redcell's INFO has a Raft section and no Modules or Cluster
// section, and no used_cpu_*_main_thread (server/rusage_unix.go); its
// lists of commands and events are sorted where Redis's follow its hash
// tables; LATENCY GRAPH's chart is plainer (server/latency.go).

// diagnosticsSame are commands whose replies are the same on both, in
// RESP2 and RESP3.
var diagnosticsSame = []string{
	"SLOWLOG HELP", "LATENCY HELP", "MEMORY HELP",
	"SLOWLOG", "SLOWLOG NOSUCH", "SLOWLOG LEN x", "SLOWLOG GET -2", "SLOWLOG GET x", "SLOWLOG GET 1 2",
	"SLOWLOG RESET", "SLOWLOG GET 0",
	"LATENCY", "LATENCY NOSUCH", "LATENCY HISTORY", "LATENCY HISTORY a b", "LATENCY HISTORY command",
	"LATENCY LATEST", "LATENCY GRAPH command", "LATENCY RESET", "LATENCY RESET command fast-command", "LATENCY DOCTOR",
	"LATENCY HISTOGRAM nosuch",
	"MEMORY", "MEMORY NOSUCH", "MEMORY USAGE", "MEMORY USAGE nokey", "MEMORY USAGE k SAMPLES",
	"MEMORY USAGE k SAMPLES -1", "MEMORY USAGE k SAMPLES x", "MEMORY USAGE k FOO 3", "MEMORY STATS x", "MEMORY DOCTOR x",
	"CONFIG GET slowlog-log-slower-than", "CONFIG GET slowlog-max-len", "CONFIG GET latency-monitor-threshold",
	"CONFIG GET latency-tracking", "CONFIG GET latency-tracking-info-percentiles",
	"CONFIG SET slowlog-log-slower-than -2", "CONFIG SET slowlog-max-len -1", "CONFIG SET latency-monitor-threshold -1",
	"CONFIG SET latency-monitor-threshold x", "CONFIG SET latency-tracking maybe",
}

// TestDiagnosticsLikeRedis compares the diagnostics commands with
// redis-server's, after the same commands on both.
func TestDiagnosticsLikeRedis(t *testing.T) {
	t.Parallel()
	rd := mustDial(t, startRedisServer(t))
	n := startTestNode(t, "diagnostics-oracle")
	rc := mustDial(t, n.addr())
	both := func(args ...string) (reply, reply) {
		return mustDo(t, rc, args...), mustDo(t, rd, args...)
	}
	for _, proto := range []string{"2", "3"} {
		both("HELLO", proto)
		both("SET", "k", "v")
		for _, line := range diagnosticsSame {
			gotRC, gotRD := both(strings.Fields(line)...)
			if wire(gotRC) != wire(gotRD) {
				t.Errorf("RESP%s %s: Redcell %.300s, Redis %.300s", proto, line, wire(gotRC), wire(gotRD))
			}
		}
	}

	// The same commands, counted the same way: a write, a read, a
	// subcommand, an arity error (rejected), a failing command, an
	// unknown command and subcommand (errorstats only), MULTI/EXEC with
	// a failing queued command.
	both("CONFIG", "RESETSTAT")
	both("SLOWLOG", "RESET")
	both("CONFIG", "SET", "slowlog-log-slower-than", "0")
	both("CLIENT", "SETNAME", "oracle")
	long := strings.Repeat("x", 200)
	many := []string{"DEL"}
	for i := 0; i < 40; i++ {
		many = append(many, "k"+strings.Repeat("z", i))
	}
	for _, cmd := range [][]string{{"SET", "s", long}, {"GET", "s"}, {"INCR", "s"}, {"GET"}, {"NOSUCH"}, {"CLIENT", "NOSUCH"},
		{"CLIENT", "ID", "x"}, {"CLIENT", "ID"}, {"MULTI"}, {"SET", "t", "1"}, {"INCR", "s"}, {"EXEC"}, many, {"AUTH", "pw"}} {
		both(cmd...)
	}
	statsRC, statsRD := infoText(t, rc, "commandstats"), infoText(t, rd, "commandstats")
	if a, b := commandCounts(t, statsRC), commandCounts(t, statsRD); !slices.Equal(a, b) || len(a) < 8 {
		t.Errorf("commandstats counts:\nRedcell %v\nRedis   %v", a, b)
	}
	if a, b := infoText(t, rc, "errorstats"), infoText(t, rd, "errorstats"); a != b {
		t.Errorf("errorstats: Redcell %q, Redis %q", a, b)
	}
	latRC, latRD := infoText(t, rc, "latencystats"), infoText(t, rd, "latencystats")
	if a, b := latencyNames(t, latRC), latencyNames(t, latRD); !slices.Equal(a, b) || len(a) < 8 {
		t.Errorf("latencystats commands: Redcell %v, Redis %v", a, b)
	}

	// SLOWLOG GET: each entry's shape, and its arguments exactly (cut,
	// counted, redacted as Redis does); the name and the address's host.
	entRC, entRD := both("SLOWLOG", "GET", "-1")
	if len(entRC.elems) == 0 || len(entRC.elems) != len(entRD.elems) {
		t.Fatalf("SLOWLOG GET -1: Redcell %d entries, Redis %d", len(entRC.elems), len(entRD.elems))
	}
	for i := range entRD.elems {
		a, b := entRC.elems[i], entRD.elems[i]
		if slowShape(a) != slowShape(b) || wire(a.elems[3]) != wire(b.elems[3]) || a.elems[5].str != b.elems[5].str {
			t.Errorf("slow log entry %d: Redcell %.400s, Redis %.400s", i, wire(a), wire(b))
		}
	}

	// INFO: the sections and their order (Redcell's Raft and Redis's
	// Modules aside; Cluster is in both, cluster_enabled 1 on Redcell),
	// and INFO cpu's fields.
	for _, args := range [][]string{{"INFO"}, {"INFO", "default"}, {"INFO", "all"}, {"INFO", "everything"}} {
		a, b := sectionNames(mustDo(t, rc, args...).str), sectionNames(mustDo(t, rd, args...).str)
		a = slices.DeleteFunc(a, func(s string) bool { return s == "Raft" })
		b = slices.DeleteFunc(b, func(s string) bool { return s == "Modules" })
		if !slices.Equal(a, b) {
			t.Errorf("%v sections: Redcell %v, Redis %v", args, a, b)
		}
	}
	cpuRC, cpuRD := fieldNames(infoText(t, rc, "cpu")), fieldNames(infoText(t, rd, "cpu"))
	if !slices.Equal(cpuRC, cpuRD[:min(4, len(cpuRD))]) {
		t.Errorf("INFO cpu: Redcell %v, Redis %v", cpuRC, cpuRD)
	}
	if !regexp.MustCompile(`(?m)^used_cpu_user:\d+\.\d{6}\r$`).MatchString(infoText(t, rc, "cpu")) {
		t.Errorf("INFO cpu: %q", infoText(t, rc, "cpu"))
	}

	// MEMORY: USAGE answers an integer on both, STATS the same fields in
	// the same order, DOCTOR one of Redis's reports; LATENCY HISTOGRAM
	// the same shape.
	both("SET", "k", "v") // the DEL above removed it
	for _, proto := range []string{"2", "3"} {
		both("HELLO", proto)
		if a, b := both("MEMORY", "USAGE", "k"); a.kind != ':' || b.kind != ':' {
			t.Errorf("RESP%s MEMORY USAGE k: Redcell %s, Redis %s", proto, wire(a), wire(b))
		}
		a, b := both("MEMORY", "STATS")
		if ka, kb := mapShape(a), mapShape(b); ka != kb {
			t.Errorf("RESP%s MEMORY STATS:\nRedcell %s\nRedis   %s", proto, ka, kb)
		}
		if a, _ := both("MEMORY", "DOCTOR"); !strings.HasPrefix(a.str, "Hi Sam") && !strings.HasPrefix(a.str, "Sam, I detected") {
			t.Errorf("MEMORY DOCTOR: %q", a.str)
		}
		a, b = both("LATENCY", "HISTOGRAM", "set")
		if ka, kb := histogramShape(a), histogramShape(b); ka != kb {
			t.Errorf("RESP%s LATENCY HISTOGRAM set:\nRedcell %s\nRedis   %s", proto, wire(a), wire(b))
		}
	}

	// COMMAND INFO: name, arity, flags, key positions and ACL categories
	// of the containers and every subcommand.
	for _, name := range []string{"slowlog", "latency", "memory"} {
		a, b := commandInfoShape(mustDo(t, rc, "COMMAND", "INFO", name)), commandInfoShape(mustDo(t, rd, "COMMAND", "INFO", name))
		if !slices.Equal(a, b) {
			t.Errorf("COMMAND INFO %s:\nRedcell %v\nRedis   %v", name, a, b)
		}
	}
}

// infoText is INFO section's text.
func infoText(t *testing.T, c *respConn, section string) string {
	t.Helper()
	return mustDo(t, c, "INFO", section).str
}

// commandCounts are commandstats' lines without the times, sorted.
func commandCounts(t *testing.T, text string) []string {
	t.Helper()
	re := regexp.MustCompile(`^(cmdstat_[a-z|.\-_]+):calls=(\d+),usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=(\d+),failed_calls=(\d+)$`)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\r\n")[1:] {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("commandstats line %q is not in Redis's format", l)
			continue
		}
		if m[1] == "cmdstat_info" || m[1] == "cmdstat_hello" {
			continue // asked a different number of times of each
		}
		out = append(out, m[1]+" calls="+m[2]+" rejected="+m[3]+" failed="+m[4])
	}
	sort.Strings(out)
	return out
}

// latencyNames are latencystats' commands, sorted, each line checked
// against Redis's format.
func latencyNames(t *testing.T, text string) []string {
	t.Helper()
	re := regexp.MustCompile(`^latency_percentiles_usec_([a-z|.\-_]+):p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\r\n")[1:] {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("latencystats line %q is not in Redis's format", l)
			continue
		}
		if m[1] != "info" && m[1] != "hello" {
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// slowShape is a slow log entry's RESP types.
func slowShape(e reply) string {
	var b strings.Builder
	b.WriteByte(e.kind)
	for _, f := range e.elems {
		b.WriteByte(f.kind)
	}
	return b.String()
}

// sectionNames are INFO's "# Name" headers in order.
func sectionNames(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\r\n") {
		if name, ok := strings.CutPrefix(l, "# "); ok {
			out = append(out, name)
		}
	}
	return out
}

// fieldNames are an INFO section's field names in order.
func fieldNames(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\r\n") {
		if k, _, ok := strings.Cut(l, ":"); ok {
			out = append(out, k)
		}
	}
	return out
}

// mapShape is a reply with every integer, bulk string that is a number,
// and double replaced by its type: the keys and the structure, not the
// values.
func mapShape(r reply) string {
	switch {
	case len(r.elems) > 0:
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = mapShape(e)
		}
		return string(r.kind) + "[" + strings.Join(parts, " ") + "]"
	case r.kind == ':' || r.kind == ',':
		return string(r.kind) + "n"
	case r.kind == '$' && regexp.MustCompile(`^-?[0-9.e+-]+$`).MatchString(r.str):
		return "$n"
	}
	return wire(r)
}

// histogramShape is mapShape of a LATENCY HISTOGRAM reply with each
// histogram_usec's buckets (how many depends on the latencies) reduced to
// their type, if they are pairs of integers.
func histogramShape(r reply) string {
	var cut func(r reply) reply
	cut = func(r reply) reply {
		out := r
		out.elems = make([]reply, len(r.elems))
		for i, e := range r.elems {
			out.elems[i] = cut(e)
			if i > 0 && r.elems[i-1].str == "histogram_usec" {
				pairs := len(e.elems)%2 == 0 && len(e.elems) > 0
				for _, b := range e.elems {
					pairs = pairs && b.kind == ':'
				}
				out.elems[i] = reply{kind: '+', str: string(e.kind) + map[bool]string{true: "buckets", false: "malformed"}[pairs]}
			}
		}
		return out
	}
	return mapShape(cut(r))
}

// commandInfoShape is COMMAND INFO's first seven fields (name, arity,
// flags sorted, first key, last key, step, ACL categories sorted) of a
// command and of each of its subcommands, sorted by name.
func commandInfoShape(r reply) []string {
	var out []string
	var walk func(e reply)
	walk = func(e reply) {
		if len(e.elems) < 7 {
			out = append(out, "malformed "+wire(e))
			return
		}
		flags := strings.Fields(strings.Trim(e.elems[2].String(), "[]~{}"))
		acl := strings.Fields(strings.Trim(e.elems[6].String(), "[]~{}"))
		sort.Strings(flags)
		sort.Strings(acl)
		out = append(out, strings.Join([]string{e.elems[0].String(), e.elems[1].String(), strings.Join(flags, ","),
			e.elems[3].String(), e.elems[4].String(), e.elems[5].String(), strings.Join(acl, ",")}, " "))
		if len(e.elems) > 9 {
			for _, sub := range e.elems[9].elems {
				walk(sub)
			}
		}
	}
	for _, e := range r.elems {
		walk(e)
	}
	sort.Strings(out)
	return out
}
