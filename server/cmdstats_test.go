package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// infoLines is INFO section's lines on c, its header left out.
func infoLines(c *client, section string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(c.replyTreeOf("INFO", section).s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

// cmdstat parses a cmdstat_ line's calls, rejected and failed counts.
func cmdstat(t *testing.T, lines map[string]string, name string) (calls, rejected, failed int64) {
	t.Helper()
	v, ok := lines["cmdstat_"+name]
	if !ok {
		return 0, 0, 0
	}
	m := regexp.MustCompile(`^calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),rejected_calls=(\d+),failed_calls=(\d+)$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("cmdstat_%s:%s is not in Redis's format", name, v)
	}
	calls, _ = strconv.ParseInt(m[1], 10, 64)
	rejected, _ = strconv.ParseInt(m[4], 10, 64)
	failed, _ = strconv.ParseInt(m[5], 10, 64)
	return calls, rejected, failed
}

// TestCommandStats: every way a command is answered is counted once, as
// Redis counts it: a pipeline's writes and the reads riding with them when
// the run is answered, connection commands at once, a container's
// subcommand under its own name, queued commands when EXEC runs them; an
// arity error is a rejected call, an error reply of a command that ran a
// failed call; an unknown command or subcommand only an error. CONFIG
// RESETSTAT starts them again.
func TestCommandStats(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	c.send(encodeCmd("SET", "s", "v") + encodeCmd("INCR", "s") + encodeCmd("GET", "s") + encodeCmd("SET", "t", "1") +
		encodeCmd("EXISTS", "s") + encodeCmd("PING"))
	c.expectReplies("+OK", "-ERR value is not an integer or out of range", "$v", "+OK", ":1", "+PONG")
	c.send(encodeCmd("GET") + encodeCmd("GET"))
	c.expectReplies("-ERR wrong number of arguments for 'get' command")
	c.expectReplies("-ERR wrong number of arguments for 'get' command")
	for _, cmd := range [][]string{{"NOSUCH"}, {"CLIENT", "NOSUCH"}, {"CLIENT", "ID", "extra"}, {"CLIENT", "ID"},
		{"MULTI"}, {"SET", "u", "1"}, {"INCR", "s"}, {"PING"}, {"EXEC"}} {
		c.sendCmd(cmd...)
	}
	c.expectReplies("-ERR unknown command 'NOSUCH', with args beginning with: ", "-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.",
		"-ERR wrong number of arguments for 'client|id' command")
	c.reply() // CLIENT ID
	c.expectReplies("+OK", "+QUEUED", "+QUEUED", "+QUEUED", "*[+OK -ERR value is not an integer or out of range +PONG]")

	lines := infoLines(c, "commandstats")
	for _, tc := range []struct {
		name                    string
		calls, rejected, failed int64
	}{
		{"set", 3, 0, 0}, {"incr", 2, 0, 2}, {"get", 1, 2, 0}, {"exists", 1, 0, 0}, {"ping", 2, 0, 0},
		{"client|id", 1, 1, 0}, {"multi", 1, 0, 0}, {"exec", 1, 0, 0}, {"nosuch", 0, 0, 0}, {"client", 0, 0, 0},
	} {
		calls, rejected, failed := cmdstat(t, lines, tc.name)
		if calls != tc.calls || rejected != tc.rejected || failed != tc.failed {
			t.Errorf("cmdstat_%s: calls %d rejected %d failed %d, want %d %d %d", tc.name, calls, rejected, failed, tc.calls, tc.rejected, tc.failed)
		}
	}
	errs := infoLines(c, "errorstats")
	if errs["errorstat_ERR"] != "count=7" {
		t.Errorf("errorstats = %v, want errorstat_ERR:count=7", errs)
	}
	if got := infoLines(c, "stats")["total_error_replies"]; got != "7" {
		t.Errorf("total_error_replies = %s, want 7", got)
	}
	lat := infoLines(c, "latencystats")
	if !regexp.MustCompile(`^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`).MatchString(lat["latency_percentiles_usec_set"]) {
		t.Errorf("latencystats of set = %q", lat["latency_percentiles_usec_set"])
	}
	// INFO with no argument and INFO default leave the two per-command
	// sections out; all and everything have them.
	for _, args := range [][]string{{"INFO"}, {"INFO", "default"}, {"INFO", "all"}, {"INFO", "everything"}} {
		text := c.replyTreeOf(args...).s
		full := len(args) == 2 && args[1] != "default"
		for _, h := range []string{"# Commandstats", "# Latencystats"} {
			if strings.Contains(text, h) != full {
				t.Errorf("%v: %s present %v", args, h, !full)
			}
		}
		for _, h := range []string{"# CPU", "# Errorstats"} {
			if !strings.Contains(text, h) {
				t.Errorf("%v: no %s", args, h)
			}
		}
	}
	if cpu := infoLines(c, "cpu"); !regexp.MustCompile(`^\d+\.\d{6}$`).MatchString(cpu["used_cpu_user"]) || len(cpu) != 4 {
		t.Errorf("INFO cpu = %v", cpu)
	}

	if got := c.do("CONFIG", "RESETSTAT"); got != "+OK" {
		t.Fatalf("CONFIG RESETSTAT = %s", got)
	}
	lines = infoLines(c, "commandstats")
	if len(lines) != 1 || lines["cmdstat_config|resetstat"] == "" {
		t.Errorf("after CONFIG RESETSTAT: %v, want config|resetstat alone (counted after it ran, as in Redis)", lines)
	}
	if errs := infoLines(c, "errorstats"); len(errs) != 0 {
		t.Errorf("errorstats after CONFIG RESETSTAT: %v", errs)
	}
	if lat := infoLines(c, "latencystats"); lat["latency_percentiles_usec_set"] != "" {
		t.Errorf("latencystats after CONFIG RESETSTAT: %v", lat)
	}
}

// TestSlowlog: the slow log's entries (Redis's six fields, its cuts of
// long arguments and argument lists, redacted passwords), GET's count,
// LEN, RESET, slowlog-max-len and the errors.
func TestSlowlog(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	for _, cmd := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, {"CLIENT", "SETNAME", "tester"}} {
		if got := c.do(cmd...); got != "+OK" {
			t.Fatalf("%v = %s", cmd, got)
		}
	}
	long := strings.Repeat("x", 200)
	c.do("SET", "k", long)
	many := []string{"DEL"}
	for i := 0; i < 40; i++ {
		many = append(many, "k"+strconv.Itoa(i))
	}
	c.do(many...)
	c.do("AUTH", "secret")
	r := c.replyTreeOf("SLOWLOG", "GET", "3")
	if len(r.elems) != 3 {
		t.Fatalf("SLOWLOG GET 3 = %s", r)
	}
	auth, del, set := r.elems[0], r.elems[1], r.elems[2]
	for _, e := range r.elems {
		if len(e.elems) != 6 || e.elems[0].typ != ':' || e.elems[1].typ != ':' || e.elems[2].typ != ':' || e.elems[3].typ != '*' ||
			e.elems[4].typ != '$' || e.elems[5].s != "tester" {
			t.Errorf("entry %s: not id, time, duration, args, addr, name", e)
		}
	}
	if got := auth.elems[3].String(); got != "*[$AUTH $(redacted)]" {
		t.Errorf("AUTH's arguments = %s", got)
	}
	if args := del.elems[3].elems; len(args) != 32 || args[31].s != "... (10 more arguments)" || args[30].s != "k29" {
		t.Errorf("DEL's arguments = %s", del.elems[3])
	}
	if got := set.elems[3].elems[2].s; got != strings.Repeat("x", 128)+"... (72 more bytes)" {
		t.Errorf("SET's long argument = %q", got)
	}
	if id0, id1 := del.elems[0].s, auth.elems[0].s; id1 != strconv.Itoa(mustAtoi(t, id0)+1) {
		t.Errorf("ids %s then %s", id0, id1)
	}
	if got := c.do("SLOWLOG", "LEN"); got == ":0" {
		t.Errorf("SLOWLOG LEN = %s", got)
	}
	for _, tc := range [][2]string{
		{"SLOWLOG GET -2", "-ERR count should be greater than or equal to -1"},
		{"SLOWLOG GET x", "-ERR count should be greater than or equal to -1"},
		{"SLOWLOG GET 1 2", "-ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP."},
		{"SLOWLOG LEN x", "-ERR wrong number of arguments for 'slowlog|len' command"},
		{"SLOWLOG NOSUCH", "-ERR unknown subcommand 'NOSUCH'. Try SLOWLOG HELP."},
		{"CONFIG SET slowlog-log-slower-than -2", "-ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument must be between -1 and 9223372036854775807 inclusive"},
		{"CONFIG SET slowlog-max-len 2", "+OK"},
		{"SLOWLOG LEN", ":2"},
		{"SLOWLOG RESET", "+OK"},
		{"SLOWLOG LEN", ":1"}, // SLOWLOG RESET itself, logged after it ran
		{"CONFIG SET slowlog-log-slower-than -1", "+OK"},
		{"SLOWLOG RESET", "+OK"},
		{"PING", "+PONG"},
		{"SLOWLOG GET -1", "*[]"},
	} {
		if got := c.do(strings.Fields(tc[0])...); got != tc[1] {
			t.Errorf("%s = %s, want %s", tc[0], got, tc[1])
		}
	}
}

// TestLatencyMonitor: commands at or over latency-monitor-threshold make
// samples of "command" or "fast-command"; LATEST, HISTORY, RESET, GRAPH
// and DOCTOR answer in Redis's shapes and texts.
func TestLatencyMonitor(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	for _, tc := range [][2]string{
		{"LATENCY LATEST", "*[]"},
		{"LATENCY HISTORY command", "*[]"},
		{"LATENCY GRAPH command", "-ERR No samples available for event 'command'"},
		{"LATENCY RESET", ":0"},
		{"LATENCY NOSUCH", "-ERR unknown subcommand 'NOSUCH'. Try LATENCY HELP."},
		{"LATENCY HISTORY a b", "-ERR wrong number of arguments for 'latency|history' command"},
		{"CONFIG SET latency-monitor-threshold -1", "-ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold') - argument must be between 0 and 9223372036854775807 inclusive"},
	} {
		if got := c.do(strings.Fields(tc[0])...); got != tc[1] {
			t.Errorf("%s = %s, want %s", tc[0], got, tc[1])
		}
	}
	if got := c.replyTreeOf("LATENCY", "DOCTOR").s; !strings.HasPrefix(got, "I'm sorry, Dave, I can't do that.") {
		t.Errorf("LATENCY DOCTOR, monitoring off = %q", got)
	}
	// A command's time is not under the test's control: samples are
	// added as offer adds them, with the monitor on at a threshold no
	// real command reaches.
	m := &n.srv.diag.lat
	m.threshold.Store(1 << 40)
	m.add("command", 7, 1000)
	m.add("command", 9, 1000) // the same second keeps its highest
	m.add("command", 6, 1001)
	m.add("fast-command", 5, 1002)
	for _, tc := range [][2]string{
		{"LATENCY LATEST", "*[*[$command :1001 :6 :9] *[$fast-command :1002 :5 :5]]"},
		{"LATENCY HISTORY command", "*[*[:1000 :9] *[:1001 :6]]"},
		{"LATENCY RESET fast-command nosuch", ":1"},
		{"LATENCY LATEST", "*[*[$command :1001 :6 :9]]"},
	} {
		if got := c.do(strings.Fields(tc[0])...); got != tc[1] {
			t.Errorf("%s = %s, want %s", tc[0], got, tc[1])
		}
	}
	if got := c.replyTreeOf("LATENCY", "GRAPH", "command").s; !strings.HasPrefix(got, "command - high 9 ms, low 6 ms (all time high 9 ms)\n"+strings.Repeat("-", 80)+"\n") {
		t.Errorf("LATENCY GRAPH = %q", got)
	}
	if got := c.replyTreeOf("LATENCY", "DOCTOR").s; !strings.Contains(got, "1. command: 2 latency spikes (average 7ms, mean deviation 1ms, period 0.50 sec). Worst all time event 9ms.") {
		t.Errorf("LATENCY DOCTOR = %q", got)
	}
	c.do("SET", "k", "v")
	if got := c.do("LATENCY", "HISTOGRAM", "set", "nosuch"); !regexp.MustCompile(`^\*\[\$set \*\[\$calls :1 \$histogram_usec \*\[:\d+ :1\]\]\]$`).MatchString(got) {
		t.Errorf("LATENCY HISTOGRAM set nosuch = %s", got)
	}
}

// TestMemoryUsage: a key's footprint from this node's state machine, nil
// for a missing key, Redis's option errors; and the other MEMORY
// subcommands' shapes.
func TestMemoryUsage(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	c.do("SET", "k", strings.Repeat("v", 1000))
	c.do("SET", "small", "v")
	big, _ := strconv.Atoi(strings.TrimPrefix(c.do("MEMORY", "USAGE", "k"), ":"))
	small, _ := strconv.Atoi(strings.TrimPrefix(c.do("MEMORY", "USAGE", "small", "SAMPLES", "0"), ":"))
	if small <= 0 || big < small+1000 {
		t.Errorf("MEMORY USAGE: %d bytes for a 1000-byte value, %d for one byte", big, small)
	}
	for _, tc := range [][2]string{
		{"MEMORY USAGE nosuch", "$nil"},
		{"MEMORY USAGE k SAMPLES", "-ERR syntax error"},
		{"MEMORY USAGE k SAMPLES -1", "-ERR syntax error"},
		{"MEMORY USAGE k SAMPLES x", "-ERR value is not an integer or out of range"},
		{"MEMORY USAGE k FOO 3", "-ERR syntax error"},
		{"MEMORY USAGE", "-ERR wrong number of arguments for 'memory|usage' command"},
		{"MEMORY NOSUCH", "-ERR unknown subcommand 'NOSUCH'. Try MEMORY HELP."},
		{"MEMORY PURGE", "+OK"},
	} {
		if got := c.do(strings.Fields(tc[0])...); got != tc[1] {
			t.Errorf("%s = %s, want %s", tc[0], got, tc[1])
		}
	}
	// MEMORY USAGE never rides in a write's log entry.
	before := c.infoInt("raft_applied_index")
	c.send(encodeCmd("SET", "a", "1") + encodeCmd("MEMORY", "USAGE", "a") + encodeCmd("MULTI") + encodeCmd("MEMORY", "USAGE", "a") + encodeCmd("EXEC"))
	c.expectReplies("+OK")
	if got := c.reply(); !strings.HasPrefix(got, ":") {
		t.Errorf("MEMORY USAGE after a write in one pipeline = %s", got)
	}
	c.expectReplies("+OK", "+QUEUED")
	if got := c.reply(); !regexp.MustCompile(`^\*\[:\d+\]$`).MatchString(got) {
		t.Errorf("EXEC of MEMORY USAGE = %s", got)
	}
	if after := c.infoInt("raft_applied_index"); after != before+1 {
		t.Errorf("applied index %d -> %d: the SET alone should have made an entry", before, after)
	}
	r := c.replyTreeOf("MEMORY", "STATS")
	if len(r.elems) != 2*28 || r.elems[0].s != "peak.allocated" || r.elems[len(r.elems)-2].s != "fragmentation.bytes" {
		t.Errorf("MEMORY STATS = %s", r)
	}
	if got := c.replyTreeOf("MEMORY", "DOCTOR").s; !strings.HasPrefix(got, "Hi Sam") && !strings.HasPrefix(got, "Sam,") {
		t.Errorf("MEMORY DOCTOR = %q", got)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// TestErrorStatsLimit: errors are counted by their first word; the 129th
// prefix disables the table (ERRORSTATS_DISABLED) until it is reset.
func TestErrorStatsLimit(t *testing.T) {
	var e errorStats
	e.count("ERR syntax error")
	e.count("WRONGTYPE Operation against a key holding the wrong kind of value")
	e.count("ERR x")
	e.count("NOSPACE")
	if e.counts["ERR"] != 3 || e.counts["WRONGTYPE"] != 1 || len(e.counts) != 2 {
		t.Errorf("counts = %v", e.counts)
	}
	for i := 0; i < maxErrorPrefixes-2; i++ {
		if e.count("E" + strconv.Itoa(i) + " text") {
			t.Fatalf("disabled at %d prefixes", len(e.counts))
		}
	}
	if !e.count("ONEMORE text") || len(e.counts) != 1 || e.counts["ERRORSTATS_DISABLED"] != 1 {
		t.Errorf("after the limit: %v", e.counts)
	}
	e.count("ERR again")
	if len(e.counts) != 1 {
		t.Errorf("disabled table still counts: %v", e.counts)
	}
	e.reset()
	e.count("ERR again")
	if e.counts["ERR"] != 1 {
		t.Errorf("after reset: %v", e.counts)
	}
}

// TestCommandStatsOfAPipeline: commands of one pipeline that share their
// spec, dispatch and outcome are counted together (recordRun), and still
// count one call each; a failure in the middle splits them; the slow log
// keeps every one of them with its own arguments.
func TestCommandStatsOfAPipeline(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	if got := c.do("CONFIG", "SET", "slowlog-log-slower-than", "0"); got != "+OK" {
		t.Fatalf("CONFIG SET = %s", got)
	}
	c.do("SET", "s", "text")
	c.do("SLOWLOG", "RESET")
	var sb strings.Builder
	var want []string
	for i := range 16 {
		key := "n" + strconv.Itoa(i)
		if i == 10 {
			key = "s"
		}
		sb.WriteString(encodeCmd("INCR", key))
		if i == 10 {
			want = append(want, "-ERR value is not an integer or out of range")
		} else {
			want = append(want, ":1")
		}
	}
	c.send(sb.String())
	c.expectReplies(want...)
	calls, rejected, failed := cmdstat(t, infoLines(c, "commandstats"), "incr")
	if calls != 16 || rejected != 0 || failed != 1 {
		t.Errorf("cmdstat_incr: calls %d rejected %d failed %d, want 16 0 1", calls, rejected, failed)
	}
	logged := map[string]bool{}
	for _, e := range c.replyTreeOf("SLOWLOG", "GET", "100").elems {
		logged[e.elems[3].String()] = true
	}
	for i := range 16 {
		key := "n" + strconv.Itoa(i)
		if i == 10 {
			key = "s"
		}
		if !logged["*[$INCR $"+key+"]"] {
			t.Errorf("the slow log lacks INCR %s: %v", key, logged)
		}
	}
	if n := c.do("SLOWLOG", "LEN"); n != ":19" { // the 16 INCR, SLOWLOG RESET, INFO, SLOWLOG GET
		t.Errorf("SLOWLOG LEN = %s, want :19", n)
	}
}
