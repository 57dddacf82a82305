package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
// It is built to cost the client what redis-benchmark costs it: one
// reusable write buffer per connection encoded by hand (no allocation per
// command), one write per pipeline, replies parsed in place (every reply
// of these shapes is an integer), latencies counted in a fixed histogram
// (nothing is allocated during a run, so the client never stops to
// collect garbage), and every connection served by one thread with epoll
// (pipeline_loop.go), like redis-benchmark's; the runtime is held to one P
// (GOMAXPROCS 1) for the run, so that it uses at most one of the machine's
// two cores and shares them with a multi-threaded server the same way.

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
	return parseIntReply(line)
}

// parseIntReply parses one reply line, CRLF included, which must be an
// integer: an error reply is a *replyError, another type a protocol error.
func parseIntReply(line []byte) (int64, error) {
	if len(line) < 3 || line[len(line)-2] != '\r' || line[len(line)-1] != '\n' {
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
