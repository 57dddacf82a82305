package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// respValue is one decoded RESP2 reply. Kind is the RESP type byte: '+'
// simple string, '-' error, ':' integer, '$' bulk string, '*' array. A null
// bulk string or null array has Null set. Error replies are values, not Go
// errors, so callers can compare them with expected error text.
type respValue struct {
	Kind  byte
	Str   string // '+', '-' (without the leading '-'), '$'
	Int   int64  // ':'
	Array []respValue
	Null  bool
}

// String renders the value compactly for test failures and log lines.
func (v respValue) String() string {
	switch {
	case v.Null:
		return "(nil)"
	case v.Kind == '-':
		return "-" + v.Str
	case v.Kind == ':':
		return strconv.FormatInt(v.Int, 10)
	case v.Kind == '*':
		s := "["
		for i, e := range v.Array {
			if i > 0 {
				s += ","
			}
			s += e.String()
		}
		return s + "]"
	default:
		return strconv.Quote(v.Str)
	}
}

// respConn is a minimal RESP2 client connection: enough to load a script,
// check a server and drive pipelined load for the memory mode. It is owned by
// one goroutine; nothing in it is safe for concurrent use. Commands are
// buffered by send and go out on flush, so a caller pipelines by calling send
// n times, flush once and read n times.
type respConn struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

// dialRESP connects to addr (host:port), giving up when ctx ends.
func dialRESP(ctx context.Context, addr string) (*respConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &respConn{
		conn: c,
		r:    bufio.NewReaderSize(c, 64<<10),
		w:    bufio.NewWriterSize(c, 64<<10),
	}, nil
}

// Close closes the connection.
func (c *respConn) Close() error { return c.conn.Close() }

// setDeadline bounds every following read and write; zero clears it.
func (c *respConn) setDeadline(t time.Time) error { return c.conn.SetDeadline(t) }

// send buffers one command as a RESP array of bulk strings.
func (c *respConn) send(args ...string) {
	c.w.WriteByte('*')
	c.w.WriteString(strconv.Itoa(len(args)))
	c.w.WriteString("\r\n")
	for _, a := range args {
		c.w.WriteByte('$')
		c.w.WriteString(strconv.Itoa(len(a)))
		c.w.WriteString("\r\n")
		c.w.WriteString(a)
		c.w.WriteString("\r\n")
	}
}

// flush writes every buffered command.
func (c *respConn) flush() error {
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// do sends one command and reads its reply.
func (c *respConn) do(args ...string) (respValue, error) {
	c.send(args...)
	if err := c.flush(); err != nil {
		return respValue{}, err
	}
	return c.read()
}

// read decodes the next reply. A Go error means the connection is unusable
// (I/O failure or a protocol violation); a server error reply is a value.
func (c *respConn) read() (respValue, error) {
	line, err := c.readLine()
	if err != nil {
		return respValue{}, err
	}
	if len(line) == 0 {
		return respValue{}, errors.New("resp: empty line")
	}
	kind, body := line[0], string(line[1:])
	switch kind {
	case '+', '-':
		return respValue{Kind: kind, Str: body}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return respValue{}, fmt.Errorf("resp: bad integer %q: %w", body, err)
		}
		return respValue{Kind: kind, Int: n}, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return respValue{}, fmt.Errorf("resp: bad bulk length %q: %w", body, err)
		}
		if n < 0 {
			return respValue{Kind: kind, Null: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return respValue{}, fmt.Errorf("read bulk: %w", err)
		}
		return respValue{Kind: kind, Str: string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return respValue{}, fmt.Errorf("resp: bad array length %q: %w", body, err)
		}
		if n < 0 {
			return respValue{Kind: kind, Null: true}, nil
		}
		arr := make([]respValue, n)
		for i := range arr {
			if arr[i], err = c.read(); err != nil {
				return respValue{}, err
			}
		}
		return respValue{Kind: kind, Array: arr}, nil
	default:
		return respValue{}, fmt.Errorf("resp: unexpected type byte %q", kind)
	}
}

// readLine returns one CRLF-terminated line without the CRLF. The slice
// aliases the reader's buffer and is valid until the next read.
func (c *respConn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("resp: line without CRLF: %q", line)
	}
	return line[:len(line)-2], nil
}

// throttleReply checks that v is a five-integer CL.THROTTLE reply and
// returns it.
func throttleReply(v respValue) ([5]int64, error) {
	var out [5]int64
	if v.Kind == '-' {
		return out, fmt.Errorf("error reply: %s", v.Str)
	}
	if v.Kind != '*' || len(v.Array) != 5 {
		return out, fmt.Errorf("not a 5-element array: %s", v)
	}
	for i, e := range v.Array {
		if e.Kind != ':' {
			return out, fmt.Errorf("element %d is not an integer: %s", i, v)
		}
		out[i] = e.Int
	}
	return out, nil
}
