package systemtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// respConn is a minimal RESP client for tests: it sends arrays of bulk
// strings and reads replies of every RESP2 and RESP3 type, keeping error
// texts and reply kinds exactly as they arrived (real clients hide both).
//
// One goroutine uses a respConn at a time. Every call is bounded by
// opTimeout through socket deadlines, so a silent server fails a test instead
// of hanging it.
type respConn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// opTimeout bounds every read or write on a test connection.
const opTimeout = 15 * time.Second

// errTornReply marks a reply whose first byte arrived but whose end did not:
// the connection broke in the middle of it. A break between replies is not
// torn (the caller sees the plain I/O error).
var errTornReply = errors.New("reply cut off in the middle")

func dialRESP(addr string) (*respConn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	return &respConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), bw: bufio.NewWriterSize(nc, 64<<10)}, nil
}

// mustDial connects to addr and closes the connection when the test ends.
func mustDial(t testing.TB, addr string) *respConn {
	t.Helper()
	c, err := dialRESP(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.close() })
	return c
}

func (c *respConn) close() { c.nc.Close() }

// send buffers one command as an array of bulk strings; flush writes it.
func (c *respConn) send(args ...string) {
	c.bw.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		c.bw.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		c.bw.WriteString(a)
		c.bw.WriteString("\r\n")
	}
}

func (c *respConn) flush() error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(opTimeout))
	return c.bw.Flush()
}

// writeRaw sends bytes exactly as given (malformed-input tests).
func (c *respConn) writeRaw(b []byte) error {
	if err := c.flush(); err != nil {
		return err
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(opTimeout))
	_, err := c.nc.Write(b)
	return err
}

// do sends one command and reads its reply.
func (c *respConn) do(args ...string) (reply, error) {
	c.send(args...)
	if err := c.flush(); err != nil {
		return reply{}, err
	}
	return c.read()
}

// read reads one reply. An I/O error before the reply's first byte is
// returned as is; one after it wraps errTornReply.
func (c *respConn) read() (reply, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(opTimeout))
	if _, err := c.br.Peek(1); err != nil {
		return reply{}, err
	}
	r, err := c.parse()
	if err != nil {
		var ne net.Error
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) {
			return reply{}, fmt.Errorf("%w: %v", errTornReply, err)
		}
		return reply{}, err
	}
	return r, nil
}

// expectClosed reports nil when the server has closed the connection: the
// next read ends (EOF, or a reset) without any further byte.
func (c *respConn) expectClosed() error {
	_ = c.nc.SetReadDeadline(time.Now().Add(opTimeout))
	b, err := c.br.ReadByte()
	if err == nil {
		rest, _ := c.br.Peek(c.br.Buffered())
		return fmt.Errorf("connection still open: read %q", append([]byte{b}, rest...))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("connection still open after %v: %w", opTimeout, err)
	}
	return nil // EOF or reset: closed
}

func (c *respConn) line() (string, error) {
	s, err := c.br.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	if len(s) < 2 || s[len(s)-2] != '\r' {
		return "", fmt.Errorf("reply line %q does not end in CRLF", s)
	}
	return s[:len(s)-2], nil
}

func (c *respConn) parse() (reply, error) {
	l, err := c.line()
	if err != nil {
		return reply{}, err
	}
	if l == "" {
		return reply{}, errors.New("empty reply line")
	}
	r := reply{kind: l[0]}
	body := l[1:]
	switch r.kind {
	case '+', '-', ',', '(':
		r.str = body
	case ':':
		r.num, err = strconv.ParseInt(body, 10, 64)
	case '#':
		switch body {
		case "t":
			r.num = 1
		case "f":
		default:
			err = fmt.Errorf("bad boolean %q", body)
		}
	case '_':
		r.null = true
	case '$', '=', '!':
		var n int
		n, err = strconv.Atoi(body)
		if err != nil {
			break
		}
		if n < 0 {
			r.null = true
			break
		}
		buf := make([]byte, n+2)
		if _, err = io.ReadFull(c.br, buf); err != nil {
			break
		}
		if string(buf[n:]) != "\r\n" {
			err = fmt.Errorf("bulk of %d bytes not followed by CRLF", n)
			break
		}
		r.str = string(buf[:n])
		if r.kind == '=' {
			if len(r.str) < 4 || r.str[3] != ':' {
				err = fmt.Errorf("verbatim string %q lacks its format prefix", r.str)
				break
			}
			r.format, r.str = r.str[:3], r.str[4:]
		}
	case '*', '~', '>', '%', '|':
		var n int
		n, err = strconv.Atoi(body)
		if err != nil {
			break
		}
		if n < 0 {
			r.null = true
			break
		}
		if r.kind == '%' || r.kind == '|' {
			n *= 2 // keys and values interleaved
		}
		r.elems = make([]reply, 0, min(n, 1024))
		for i := 0; i < n; i++ {
			e, perr := c.parse()
			if perr != nil {
				return reply{}, perr
			}
			r.elems = append(r.elems, e)
		}
		if r.kind == '|' { // an attribute precedes the real reply
			return c.parse()
		}
	default:
		err = fmt.Errorf("unknown reply type %q in line %q", r.kind, l)
	}
	return r, err
}

// reply is one decoded RESP reply.
type reply struct {
	kind   byte    // the RESP type byte: + - : $ * _ % ~ = , # ( > !
	str    string  // simple, error (no '-'), bulk, verbatim (no format), double, big number
	format string  // verbatim string format ("txt")
	num    int64   // integer, boolean (0/1)
	null   bool    // $-1, *-1, _
	elems  []reply // array, set, push; map keys and values interleaved
}

func (r reply) isErr() bool { return r.kind == '-' || r.kind == '!' }

// ints returns the elements of an array made only of RESP integers.
func (r reply) ints() ([]int64, bool) {
	if r.kind != '*' || r.null {
		return nil, false
	}
	out := make([]int64, len(r.elems))
	for i, e := range r.elems {
		if e.kind != ':' {
			return nil, false
		}
		out[i] = e.num
	}
	return out, true
}

// field looks a key up in a map reply (RESP3 %) or a flat key/value array
// (RESP2).
func (r reply) field(key string) (reply, bool) {
	for i := 0; i+1 < len(r.elems); i += 2 {
		if r.elems[i].str == key {
			return r.elems[i+1], true
		}
	}
	return reply{}, false
}

// String renders a reply compactly for failure messages.
func (r reply) String() string {
	switch {
	case r.null:
		return "(nil)"
	case r.kind == '-' || r.kind == '!':
		return "-" + r.str
	case r.kind == '+':
		return "+" + r.str
	case r.kind == ':':
		return strconv.FormatInt(r.num, 10)
	case r.kind == '#':
		return map[int64]string{0: "#f", 1: "#t"}[r.num]
	case r.kind == '$' || r.kind == '=' || r.kind == ',' || r.kind == '(':
		return strconv.Quote(r.str)
	}
	parts := make([]string, len(r.elems))
	for i, e := range r.elems {
		parts[i] = e.String()
	}
	open := map[byte]string{'*': "[", '~': "~{", '>': ">[", '%': "%{"}[r.kind]
	close := map[byte]string{'*': "]", '~': "}", '>': "]", '%': "}"}[r.kind]
	return open + strings.Join(parts, " ") + close
}

// want is an expected reply, as tests write it.
type want struct {
	kind byte // '*' (array of integers), ':' integer, '+' status, '-' error, '$' bulk
	ints []int64
	num  int64
	str  string
}

func wantInts(v ...int64) want { return want{kind: '*', ints: v} }
func wantInt(n int64) want     { return want{kind: ':', num: n} }
func wantStatus(s string) want { return want{kind: '+', str: s} }
func wantErr(text string) want { return want{kind: '-', str: text} }
func wantBulk(s string) want   { return want{kind: '$', str: s} }
func (w want) isErr() bool     { return w.kind == '-' }
func (w want) matches(r reply) bool {
	switch w.kind {
	case '*':
		got, ok := r.ints()
		if !ok || len(got) != len(w.ints) {
			return false
		}
		for i := range got {
			if got[i] != w.ints[i] {
				return false
			}
		}
		return true
	case ':':
		return r.kind == ':' && r.num == w.num
	case '$':
		return r.kind == '$' && !r.null && r.str == w.str
	default:
		return r.kind == w.kind && r.str == w.str
	}
}

func (w want) String() string {
	switch w.kind {
	case '*':
		parts := make([]string, len(w.ints))
		for i, v := range w.ints {
			parts[i] = strconv.FormatInt(v, 10)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case ':':
		return strconv.FormatInt(w.num, 10)
	case '$':
		return strconv.Quote(w.str)
	}
	return string(w.kind) + w.str
}

// mustDo sends one command and returns its reply; transport errors fail the
// test (error replies do not).
func mustDo(t testing.TB, c *respConn, args ...string) reply {
	t.Helper()
	r, err := c.do(args...)
	if err != nil {
		t.Fatalf("%s: %v", quoteArgs(args), err)
	}
	return r
}

// expectReply sends one command and checks its reply.
func expectReply(t testing.TB, c *respConn, w want, args ...string) {
	t.Helper()
	if r := mustDo(t, c, args...); !w.matches(r) {
		t.Errorf("%s: got %v, want %v", quoteArgs(args), r, w)
	}
}

// quoteArgs renders a command for messages, quoting arguments that need it.
func quoteArgs(args []string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"\\\r\n\t") || !isPrintable(a) {
			parts[i] = strconv.Quote(a)
		} else {
			parts[i] = a
		}
	}
	return strings.Join(parts, " ")
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// deadline is the read/write deadline of a test socket operation.
func deadline() time.Time { return time.Now().Add(opTimeout) }
