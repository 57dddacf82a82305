package systemtest

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The differential test sends the same generated command sequences to a
// redcell node and to a real redis-server 7 and compares the replies byte for
// byte, except where a step's comparer says otherwise (order Redis leaves
// unspecified, time, SCAN cursors). The generators live in
// differential_gen_test.go; DESIGN.md "Differential test against Redis"
// explains the whole.

var (
	differentialSeed = flag.Uint64("differential.seed", 0, "TestDifferential: run only the sequence with this seed (as printed by a failure)")
	differentialN    = flag.Int("differential.n", 3000, "TestDifferential: number of generated sequences")
)

// TestDifferential compares redcell with redis-server on generated command
// sequences. A failure prints the seed and the whole sequence with both
// servers' replies; -differential.seed N reruns exactly that sequence.
func TestDifferential(t *testing.T) {
	redisAddr := startRedisServer(t)
	n := startTestNode(t, "differential")
	rc := mustDial(t, n.addr())
	differentialClock = freshBase(t, rc) // frozen for the whole test: no redcell key ever ages

	t.Logf("known differences excluded until fixed (differential_gen_test.go excludedToFix): %q", excludedToFix)

	seeds := make([]uint64, 0, *differentialN)
	if *differentialSeed != 0 {
		seeds = append(seeds, *differentialSeed)
	} else {
		base := uint64(time.Now().UnixNano())
		t.Logf("base seed %d (sequence i has seed base+i)", base)
		for i := 0; i < *differentialN; i++ {
			seeds = append(seeds, base+uint64(i))
		}
	}
	start := time.Now()
	steps, failures := 0, 0
	for _, seed := range seeds {
		seq, pipelined := generateSequence(seed)
		steps += len(seq)
		report, err := runDifferential(seq, pipelined, redisAddr, n.addr())
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, report)
		}
		if report != "" {
			failures++
			t.Errorf("seed %d (pipelined: %v): replies differ (rerun: go test ./systemtest -run TestDifferential -v -differential.seed %d)\n%s", seed, pipelined, seed, report)
			if failures >= 3 {
				t.Fatalf("stopping after %d differing sequences", failures)
			}
		}
	}
	t.Logf("%d sequences, %d steps compared in %v", len(seeds), steps, time.Since(start).Round(time.Millisecond))
}

// runDifferential runs one sequence on a fresh connection to each server
// (after a FLUSHALL that is not compared) and returns "" when every step
// compared equal, or the sequence with both replies up to and including the
// first difference. Pipelined, the sequence's plain steps are written in
// batches (up to the next SCAN iteration) before their replies are read. An
// error means a server could not be talked to at all.
func runDifferential(seq []step, pipelined bool, redisAddr, redcellAddr string) (string, error) {
	var got [2][]rawValue
	for side, addr := range []string{redisAddr, redcellAddr} {
		c, err := dialRESP(addr)
		if err != nil {
			return "", err
		}
		if _, err := c.do("FLUSHALL"); err != nil {
			c.close()
			return "", fmt.Errorf("FLUSHALL on %s: %w", addr, err)
		}
		// The second connection of steps marked second (another client
		// writing between a WATCH and its EXEC).
		c2, err := dialRESP(addr)
		if err != nil {
			c.close()
			return "", err
		}
		got[side], err = runSequence(c, c2, side, seq, pipelined)
		c.close()
		c2.close()
		if err != nil {
			return describeSequence(seq, got, -1), fmt.Errorf("on %s, step %d: %w", []string{"redis", "redcell"}[side], len(got[side]), err)
		}
	}
	for i, s := range seq {
		cmp := s.compare
		if cmp == nil {
			cmp = sameBytes
		}
		if !cmp(got[0][i], got[1][i]) {
			return describeSequence(seq, got, i), nil
		}
	}
	return "", nil
}

// runSequence sends seq on c, the connection to side 0 (redis) or 1
// (redcell), and steps marked second on c2, and returns one value per step
// (fewer on an error). A step on c2 is sent after every earlier step of c
// was answered, and answered before any later one is sent.
func runSequence(c, c2 *respConn, side int, seq []step, pipelined bool) ([]rawValue, error) {
	var vals []rawValue
	for i := 0; i < len(seq); {
		if !pipelined || seq[i].scanAll || seq[i].protocolError != "" || seq[i].second {
			on := c
			if seq[i].second {
				on = c2
			}
			v, err := seq[i].runOn(on, side)
			if err != nil {
				return vals, err
			}
			vals = append(vals, v)
			i++
			continue
		}
		j := i
		_ = c.nc.SetDeadline(time.Now().Add(opTimeout))
		for ; j < len(seq) && !seq[j].scanAll && seq[j].protocolError == "" && !seq[j].second; j++ {
			seq[j].write(c, side)
		}
		if err := c.bw.Flush(); err != nil {
			return vals, err
		}
		for ; i < j; i++ {
			v, err := readValue(c)
			if err != nil {
				return vals, err
			}
			vals = append(vals, v)
		}
	}
	return vals, nil
}

// describeSequence prints every step with both replies, up to and including
// step last (all steps replied to when last is -1), marking last.
func describeSequence(seq []step, got [2][]rawValue, last int) string {
	var out strings.Builder
	for i, s := range seq {
		if last >= 0 && i > last {
			break
		}
		fmt.Fprintf(&out, "%3d %s\n", i, s)
		for side, name := range []string{"redis:  ", "redcell:"} {
			if i < len(got[side]) {
				fmt.Fprintf(&out, "      %s %s\n", name, got[side][i].quoted())
			}
		}
		if i == last {
			fmt.Fprintf(&out, "      ^^^ differs (%s)\n", s.compareName())
		}
	}
	return out.String()
}

// step is one entry of a sequence: a command sent as is, or a whole SCAN
// iteration (scanAll) whose pages are merged into one value.
type step struct {
	args []string
	// scanAll iterates SCAN from cursor 0 with args[2:] as options until
	// the cursor is 0 again; the step's value is the sorted union of the
	// keys (or the first error).
	scanAll bool
	// perSide, when set, replaces args: perSide[0] goes to redis,
	// perSide[1] to redcell, and the replies are not compared. It builds
	// the same key state through different commands (keyspaceFamily's
	// "CL key").
	perSide *[2][]string
	// inline sends args as an inline command line (words separated by
	// spaces) instead of a RESP array; only for plain words.
	inline bool
	// second sends the step on the sequence's second connection: another
	// client (differential_watch_test.go).
	second bool
	// protocolError, when set, is sent as raw bytes that break the
	// protocol; the value is the reply followed by whether the server then
	// closed the connection. Only as a sequence's last step.
	protocolError string
	// compare decides equality of redis's and redcell's values; nil is
	// sameBytes. cmpName names it for failure reports.
	compare func(redis, redcell rawValue) bool
	cmpName string
}

func (s step) String() string {
	if s.second {
		t := s
		t.second = false
		return "[second connection] " + t.String()
	}
	if s.protocolError != "" {
		return "raw bytes " + strconv.Quote(s.protocolError)
	}
	if s.perSide != nil {
		return "redis: " + quoteArgs(s.perSide[0]) + " | redcell: " + quoteArgs(s.perSide[1])
	}
	if s.inline {
		return "inline: " + quoteArgs(s.args)
	}
	if s.scanAll {
		return "SCAN-ALL " + quoteArgs(s.args[2:])
	}
	return quoteArgs(s.args)
}

func (s step) compareName() string {
	if s.cmpName != "" {
		return s.cmpName
	}
	return "bytes"
}

// write buffers the step's command for side 0 (redis) or 1 (redcell); not
// for a SCAN iteration.
func (s step) write(c *respConn, side int) {
	switch {
	case s.perSide != nil:
		c.send(s.perSide[side]...)
	case s.inline:
		c.bw.WriteString(strings.Join(s.args, " ") + "\r\n")
	case s.protocolError != "":
		c.bw.WriteString(s.protocolError)
	default:
		c.send(s.args...)
	}
}

// runOn sends the step on c, the connection to side 0 (redis) or 1
// (redcell), and reads its value.
func (s step) runOn(c *respConn, side int) (rawValue, error) {
	if s.protocolError != "" {
		return s.runProtocolError(c)
	}
	if !s.scanAll {
		_ = c.nc.SetDeadline(time.Now().Add(opTimeout))
		s.write(c, side)
		if err := c.bw.Flush(); err != nil {
			return rawValue{}, err
		}
		return readValue(c)
	}
	keys := map[string]bool{}
	cursor := "0"
	for pages := 0; ; pages++ {
		if pages > 10000 {
			return rawValue{}, errors.New("SCAN did not finish within 10000 pages")
		}
		args := append([]string{"SCAN", cursor}, s.args[2:]...)
		v, err := doRaw(c, args...)
		if err != nil {
			return v, err
		}
		if len(v.elems) != 2 || v.kind != '*' {
			return v, nil // an error (or anything unexpected) is the value
		}
		for _, k := range v.elems[1].elems {
			keys[k.str] = true
		}
		cursor = v.elems[0].str
		if cursor == "0" {
			break
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	return rawValue{kind: 'U', raw: []byte("keys: " + quoteArgs(sorted)), str: strings.Join(sorted, "\x00")}, nil
}

// runProtocolError sends the step's broken bytes and reads the reply, then
// whether the connection is closed (EOF within closeWait) or open.
func (s step) runProtocolError(c *respConn) (rawValue, error) {
	_ = c.nc.SetDeadline(time.Now().Add(opTimeout))
	c.bw.WriteString(s.protocolError)
	if err := c.bw.Flush(); err != nil {
		return rawValue{}, err
	}
	v, err := readValue(c)
	if err != nil {
		return v, err
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(closeWait))
	state := " [connection open]"
	if _, err := c.br.ReadByte(); errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		state = " [connection closed]"
	} else if err == nil {
		state = " [more bytes]"
	}
	v.raw = append(v.raw, state...)
	return v, nil
}

// closeWait bounds the wait for a server to close the connection after a
// protocol error (both close at once; an open one costs this much).
const closeWait = 2 * time.Second

// doRaw sends one command and reads one reply with its exact bytes.
func doRaw(c *respConn, args ...string) (rawValue, error) {
	_ = c.nc.SetDeadline(time.Now().Add(opTimeout))
	c.send(args...)
	if err := c.bw.Flush(); err != nil {
		return rawValue{}, err
	}
	return readValue(c)
}

// readValue reads one reply with its exact bytes.
func readValue(c *respConn) (rawValue, error) {
	var raw bytes.Buffer
	v, err := readRaw(c.br, &raw)
	v.raw = raw.Bytes()
	return v, err
}

// rawValue is one RESP2 or RESP3 reply: its exact bytes and enough of its
// structure for the comparers (aggregates keep their elements).
type rawValue struct {
	kind  byte   // the type byte: + - : $ * % ~ _ , # ( = ! > |, or 'U' for a SCAN union
	raw   []byte // the exact bytes on the wire (for an element: its own bytes)
	str   string // a simple/bulk/verbatim string, error text, number text
	null  bool   // $-1, *-1 or _
	elems []rawValue
}

func (v rawValue) quoted() string { return strconv.Quote(string(v.raw)) }

// readRaw reads one value, copying every byte it consumes into raw.
func readRaw(br *bufio.Reader, raw *bytes.Buffer) (rawValue, error) {
	start := raw.Len()
	line, err := br.ReadString('\n')
	raw.WriteString(line)
	if err != nil {
		return rawValue{}, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return rawValue{}, fmt.Errorf("malformed reply line %q", line)
	}
	v := rawValue{kind: line[0], str: line[1 : len(line)-2]}
	switch v.kind {
	case '+', '-', ':', ',', '#', '(':
	case '_':
		v.null = true
	case '$', '=', '!':
		n, err := strconv.Atoi(v.str)
		if err != nil {
			return v, fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			v.null, v.str = true, ""
			break
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return v, err
		}
		raw.Write(buf)
		v.str = string(buf[:n])
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(v.str)
		if err != nil {
			return v, fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			v.null = true
			break
		}
		if v.kind == '%' || v.kind == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			e, err := readRaw(br, raw)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
	default:
		return v, fmt.Errorf("unknown reply type in %q", line)
	}
	v.raw = append([]byte(nil), raw.Bytes()[start:]...)
	return v, nil
}

// startRedisServer starts redis-server 7 on a free loopback port with its own
// temporary directory, no persistence, and stops it by PID at the end of the
// test. redis-server is required in CI and skips the test elsewhere.
func startRedisServer(t *testing.T) string {
	t.Helper()
	return startRedisServerWithConfig(t, "", t.TempDir())
}

// startRedisServerWithConfig is startRedisServer on the config file at path
// ("" for none; the flags after it override it), with dir as its directory.
func startRedisServerWithConfig(t *testing.T, path, dir string) string {
	t.Helper()
	bin := requireTool(t, "redis-server")
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		logPath := fmt.Sprintf("%s/redis-%d.log", dir, attempt)
		var args []string
		if path != "" {
			args = append(args, path) // redis-server reads a config file named first
		}
		args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", logPath)
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }() // the only waiter on this process
		pid := cmd.Process.Pid
		stop := func() {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(stopTimeout):
				_ = syscall.Kill(pid, syscall.SIGKILL)
				<-exited
			}
		}
		if lastErr = waitRedisReady(addr, exited); lastErr == nil {
			t.Cleanup(stop)
			t.Cleanup(func() {
				if t.Failed() {
					if b, err := os.ReadFile(logPath); err == nil {
						t.Logf("redis-server log:\n%s", lastLines(string(b), 50))
					}
				}
			})
			return addr
		}
		stop() // most likely the port was taken in between: try another
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return ""
}

// waitRedisReady polls PING until redis-server answers PONG, exits, or
// readyTimeout passes.
func waitRedisReady(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		if c, err := dialRESP(addr); err == nil {
			v, err := doRaw(c, "PING")
			c.close()
			if err == nil && string(v.raw) == "+PONG\r\n" {
				return nil
			}
			lastErr = fmt.Errorf("PING: %q %v", v.raw, err)
		} else {
			lastErr = err
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited (last probe: %v)", lastErr)
		case <-time.After(pollEvery):
		}
	}
	return fmt.Errorf("redis-server not ready after %v: %v", readyTimeout, lastErr)
}

// newSeqRand is the generator's random source for one seed.
func newSeqRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }
