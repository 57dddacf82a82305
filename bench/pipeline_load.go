package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The datatypes mode's load generator: a closed-loop Go client that sends
// a *decision* of several commands (INCRBY + EXPIRE on one key, as
// envoyproxy/ratelimit does, or a sorted-set sliding log's four commands)
// where redis-benchmark can only repeat one command. Every server of the
// mode, Redis included, is driven by this same client, so its cost is the
// same in every ratio.
//
// It is built to cost the client as little as redis-benchmark does: one
// reusable write buffer per connection encoded by hand (no allocation per
// command), one write per pipeline, replies read in place from a bufio
// buffer (every reply of these shapes is an integer), latencies counted in
// a fixed histogram (nothing is allocated during a run, so the client never
// stops to collect garbage), and the runtime held
// to one P (GOMAXPROCS 1) for the run, so that like single-threaded
// redis-benchmark it uses at most one of the machine's two cores and
// shares them with a multi-threaded server the same way.

// decisionShape is what one decision sends.
type decisionShape int

const (
	// shapeCounter is envoyproxy/ratelimit's fixed window: INCRBY key 1,
	// EXPIRE key 60 on the same key, pipelined together.
	shapeCounter decisionShape = iota
	// shapeSlidingLog is a sorted-set sliding log: ZADD key now member,
	// ZREMRANGEBYSCORE key -inf now-window, ZCARD key, EXPIRE key window.
	shapeSlidingLog
	// shapeIncr is INCRBY key 1 alone: a command redis-benchmark can send
	// as well, the client check's load.
	shapeIncr
)

// Parameters of the shapes: the counter's window and the sliding log's
// (60 s, in the EXPIRE and in the scores, which are milliseconds).
const (
	counterWindowSecs = 60
	slidingWindowMs   = 60000
)

// shapeSpec is what the generator needs of a shape.
type shapeSpec struct {
	name     string
	commands []string // the decision's command names, in order
	prefix   string   // key prefix: a key belongs to one shape (WRONGTYPE otherwise)
	// minReply is the smallest integer each command may answer; anything
	// else (an error, another type, a smaller number) fails the run, as a
	// server answering errors fast must not look fast.
	minReply []int64
}

var shapes = map[decisionShape]shapeSpec{
	// INCRBY of a key that exists or not is ≥ 1; EXPIRE right after it
	// finds the key: 1.
	shapeCounter: {name: "INCRBY + EXPIRE", commands: []string{"INCRBY", "EXPIRE"}, prefix: "rl:", minReply: []int64{1, 1}},
	// The member is unique (ZADD adds it: 1), the trim removes 0 or more,
	// the count includes the new member (≥ 1), EXPIRE finds the key.
	shapeSlidingLog: {name: "ZADD + ZREMRANGEBYSCORE + ZCARD + EXPIRE", commands: []string{"ZADD", "ZREMRANGEBYSCORE", "ZCARD", "EXPIRE"}, prefix: "zl:", minReply: []int64{1, 0, 1, 1}},
	shapeIncr:       {name: "INCRBY alone", commands: []string{"INCRBY"}, prefix: "in:", minReply: []int64{1}},
}

func (s decisionShape) spec() shapeSpec { return shapes[s] }

// keyDigits is the width of a random key's number: redis-benchmark's
// __rand_int__ is 12 zero-padded digits, and the same key length keeps the
// Go client's rows comparable with redis-benchmark's.
const keyDigits = 12

// appendKey appends prefix and n as keyDigits zero-padded digits.
func appendKey(buf []byte, prefix string, n uint64) []byte {
	buf = append(buf, prefix...)
	var d [keyDigits]byte
	for i := keyDigits - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(buf, d[:]...)
}

// appendArrayHeader appends a RESP array header of n elements.
func appendArrayHeader(buf []byte, n int) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(n), 10)
	return append(buf, '\r', '\n')
}

// appendBulk appends one RESP bulk string.
func appendBulk(buf, s []byte) []byte {
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(len(s)), 10)
	buf = append(buf, '\r', '\n')
	buf = append(buf, s...)
	return append(buf, '\r', '\n')
}

func appendBulkString(buf []byte, s string) []byte {
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(len(s)), 10)
	buf = append(buf, '\r', '\n')
	buf = append(buf, s...)
	return append(buf, '\r', '\n')
}

func appendBulkInt(buf []byte, v int64) []byte {
	var tmp [20]byte
	return appendBulk(buf, strconv.AppendInt(tmp[:0], v, 10))
}

// appendDecision appends one decision of shape on key, made at nowMs, to
// buf. member makes a sliding-log entry unique (the client's id and its
// decision count: two decisions of one millisecond stay two members).
func appendDecision(buf []byte, shape decisionShape, key []byte, nowMs int64, member []byte) []byte {
	switch shape {
	case shapeCounter:
		buf = appendArrayHeader(buf, 3)
		buf = appendBulkString(buf, "INCRBY")
		buf = appendBulk(buf, key)
		buf = appendBulkString(buf, "1")
		buf = appendArrayHeader(buf, 3)
		buf = appendBulkString(buf, "EXPIRE")
		buf = appendBulk(buf, key)
		buf = appendBulkInt(buf, counterWindowSecs)
	case shapeSlidingLog:
		buf = appendArrayHeader(buf, 4)
		buf = appendBulkString(buf, "ZADD")
		buf = appendBulk(buf, key)
		buf = appendBulkInt(buf, nowMs)
		buf = appendBulk(buf, member)
		buf = appendArrayHeader(buf, 4)
		buf = appendBulkString(buf, "ZREMRANGEBYSCORE")
		buf = appendBulk(buf, key)
		buf = appendBulkString(buf, "-inf")
		buf = appendBulkInt(buf, nowMs-slidingWindowMs)
		buf = appendArrayHeader(buf, 2)
		buf = appendBulkString(buf, "ZCARD")
		buf = appendBulk(buf, key)
		buf = appendArrayHeader(buf, 3)
		buf = appendBulkString(buf, "EXPIRE")
		buf = appendBulk(buf, key)
		buf = appendBulkInt(buf, slidingWindowMs/1000)
	case shapeIncr:
		buf = appendArrayHeader(buf, 3)
		buf = appendBulkString(buf, "INCRBY")
		buf = appendBulk(buf, key)
		buf = appendBulkString(buf, "1")
	}
	return buf
}

// replyError is an error reply where an integer was expected.
type replyError struct{ text string }

func (e *replyError) Error() string { return "error reply: " + e.text }

// isUnknownCommand reports whether err is the server refusing a command it
// does not have (Redis: "ERR unknown command 'ZADD', with args …").
func isUnknownCommand(err error) bool {
	var re *replyError
	return errors.As(err, &re) && strings.HasPrefix(re.text, "ERR unknown command")
}

// unavailableReason is the reply of a server without a command, cut
// before the arguments Redis echoes ("ERR unknown command 'ZADD'"): what a
// "not available" row shows.
func unavailableReason(err error) string {
	var re *replyError
	if !errors.As(err, &re) {
		return err.Error()
	}
	text, _, _ := strings.Cut(re.text, ", with args")
	return text
}

// readIntReply reads one reply, which must be an integer. An error reply
// is a *replyError; another type is a protocol error.
func readIntReply(r *bufio.Reader) (int64, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return 0, fmt.Errorf("resp: bad line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case ':':
	case '-':
		return 0, &replyError{text: string(body)}
	default:
		return 0, fmt.Errorf("resp: want an integer reply, got %q", line)
	}
	neg := false
	if len(body) > 0 && body[0] == '-' {
		neg, body = true, body[1:]
	}
	if len(body) == 0 || len(body) > 18 {
		return 0, fmt.Errorf("resp: bad integer %q", line)
	}
	var v int64
	for _, c := range body {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("resp: bad integer %q", line)
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, nil
}

// loadSpec is one closed-loop load: clients connections, each with one
// pipeline of pipeline decisions in flight, on keyspace random keys.
type loadSpec struct {
	shape    decisionShape
	clients  int
	pipeline int
	keyspace int
}

// loadClient is one connection of a run. It is owned by its goroutine.
type loadClient struct {
	id     int
	conn   net.Conn
	r      *bufio.Reader
	buf    []byte
	key    []byte
	member []byte
	rng    *rand.Rand
	seq    uint64
	// Filled while the run's phase is "measuring": decisions completed
	// and each one's latency (from its pipeline's write to its last reply).
	done int64
	lat  latencyHistogram
}

// Run phases, read by every client after each pipeline.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// loadRun is what one run measured at the client.
type loadRun struct {
	decisions int64            // completed while measuring
	window    time.Duration    // the measuring window
	latencies latencyHistogram // one per decision
	clientCPU time.Duration    // this process's CPU over the window
}

// runPipelineLoad connects spec.clients connections to addr, runs them for
// warmup unmeasured, then for measure, and stops them. onMeasure is
// called (from the calling goroutine) right before the measuring window
// opens and onEnd right after it closes: the caller samples the server's
// CPU and counters there, so both windows are the same.
//
// Goroutines: one per client, started and waited for here; the caller's
// goroutine flips the phase. The runtime is held to GOMAXPROCS 1 for the
// run and given back after.
func runPipelineLoad(ctx context.Context, addr string, spec loadSpec, warmup, measure time.Duration, onMeasure, onEnd func() error) (loadRun, error) {
	if spec.clients < 1 || spec.pipeline < 1 || spec.keyspace < 1 {
		return loadRun{}, fmt.Errorf("load %+v: clients, pipeline and keyspace must be positive", spec)
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)

	clients := make([]*loadClient, spec.clients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.conn.Close()
			}
		}
	}()
	var d net.Dialer
	for i := range clients {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return loadRun{}, fmt.Errorf("dial %s: %w", addr, err)
		}
		clients[i] = &loadClient{id: i, conn: conn, r: bufio.NewReaderSize(conn, 64<<10),
			rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}
	}

	var phase atomic.Int32
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first client to fail says why; the others then fail only
	// because their connections were closed under them.
	var firstErr error
	var failOnce sync.Once
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.loop(spec, &phase); err != nil {
				failOnce.Do(func() { firstErr = err })
				cancel()
			}
		}()
	}
	// A failed client or the caller's cancellation ends the others at
	// once: their connections are closed under them (closing again on the
	// way out is harmless). This goroutine ends with the run.
	go func() {
		<-runCtx.Done()
		for _, c := range clients {
			c.conn.Close()
		}
	}()
	wait := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-runCtx.Done():
			return runCtx.Err()
		}
	}
	stopAll := func() error {
		phase.Store(phaseStop)
		wg.Wait()
		return firstErr
	}
	if err := wait(warmup); err != nil {
		return loadRun{}, errors.Join(stopAll(), err)
	}
	if err := onMeasure(); err != nil {
		return loadRun{}, errors.Join(stopAll(), err)
	}
	cpu0 := selfCPU()
	start := time.Now()
	phase.Store(phaseMeasure)
	if err := wait(measure); err != nil {
		return loadRun{}, errors.Join(stopAll(), err)
	}
	phase.Store(phaseStop)
	window := time.Since(start)
	cpu := selfCPU() - cpu0
	endErr := onEnd()
	if err := stopAll(); err != nil {
		return loadRun{}, err
	}
	if endErr != nil {
		return loadRun{}, endErr
	}
	run := loadRun{window: window, clientCPU: cpu}
	for _, c := range clients {
		run.decisions += c.done
		run.latencies.merge(&c.lat)
	}
	if run.decisions == 0 {
		return loadRun{}, errors.New("no decision completed while measuring")
	}
	return run, nil
}

// loop sends one pipeline of decisions, reads every reply, and repeats
// until the phase is phaseStop. Decisions whose pipeline completed while
// the phase was phaseMeasure are counted, with their latencies.
func (c *loadClient) loop(spec loadSpec, phase *atomic.Int32) error {
	sp := spec.shape.spec()
	perDecision := len(sp.commands)
	lats := make([]time.Duration, 0, spec.pipeline)
	var deadlineSet time.Time
	for {
		if phase.Load() == phaseStop {
			return nil
		}
		now := time.Now()
		c.buf = c.buildPipeline(c.buf[:0], spec, now.UnixMilli())
		// A dead server fails the run within 30 s; the deadline moves
		// once a second, not per pipeline (a timer update each time).
		if now.Sub(deadlineSet) > time.Second {
			c.conn.SetDeadline(now.Add(30 * time.Second))
			deadlineSet = now
		}
		if _, err := c.conn.Write(c.buf); err != nil {
			return fmt.Errorf("client %d: write: %w", c.id, err)
		}
		lats = lats[:0]
		for range spec.pipeline {
			for j := range perDecision {
				v, err := readIntReply(c.r)
				if err != nil {
					return fmt.Errorf("client %d: %s: %w", c.id, sp.commands[j], err)
				}
				if v < sp.minReply[j] {
					return fmt.Errorf("client %d: %s answered %d, want at least %d", c.id, sp.commands[j], v, sp.minReply[j])
				}
			}
			lats = append(lats, time.Since(now))
		}
		// Counted by completion: a pipeline sent before the window and
		// answered inside it counts, one answered after it does not, so
		// the two ends of the window balance.
		if phase.Load() == phaseMeasure {
			c.done += int64(spec.pipeline)
			for _, d := range lats {
				c.lat.record(d)
			}
		}
	}
}

// buildPipeline appends spec.pipeline decisions on random keys to buf.
func (c *loadClient) buildPipeline(buf []byte, spec loadSpec, nowMs int64) []byte {
	sp := spec.shape.spec()
	for range spec.pipeline {
		c.key = appendKey(c.key[:0], sp.prefix, c.rng.Uint64N(uint64(spec.keyspace)))
		if spec.shape == shapeSlidingLog {
			c.member = c.appendMember(c.member[:0], nowMs)
		}
		buf = appendDecision(buf, spec.shape, c.key, nowMs, c.member)
	}
	return buf
}

// appendMember is a sliding-log member unique to this client's decision:
// the instant, the client and its decision count, as a sliding log makes
// its members unique (two hits of one millisecond are two entries).
func (c *loadClient) appendMember(buf []byte, nowMs int64) []byte {
	c.seq++
	buf = strconv.AppendInt(buf, nowMs, 10)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, int64(c.id), 10)
	buf = append(buf, '-')
	return strconv.AppendUint(buf, c.seq, 10)
}

// checkShape sends one decision of shape on a fresh key and reads its
// replies, so that a server without the commands is told apart before
// anything is measured: isUnknownCommand(err) is true then.
func checkShape(ctx context.Context, addr string, shape decisionShape) error {
	c, err := dialRESP(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(5 * time.Second))
	sp := shape.spec()
	key := []byte(sp.prefix + "check")
	now := time.Now()
	member := "check-" + strconv.FormatInt(now.UnixNano(), 10) // new on every check: ZADD answers 1
	if _, err := c.conn.Write(appendDecision(nil, shape, key, now.UnixMilli(), []byte(member))); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	var first error
	for j, name := range sp.commands {
		v, err := readIntReply(c.r)
		var re *replyError
		if err != nil && !errors.As(err, &re) {
			return fmt.Errorf("%s: %w", name, err) // the connection is unusable
		}
		switch {
		case err != nil && first == nil:
			first = fmt.Errorf("%s: %w", name, err)
		case err == nil && v < sp.minReply[j] && first == nil:
			first = fmt.Errorf("%s on a fresh key answered %d, want at least %d", name, v, sp.minReply[j])
		}
	}
	return first
}

// selfCPU is this process's CPU time so far (user + system, every thread):
// the load generator's, since nothing else of bench runs during a run.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
