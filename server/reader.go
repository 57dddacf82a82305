package server

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"

	"github.com/redcell/redcell/internal/sdsargs"
)

// Limits from Redis (server.h, config.c), which clients and tests rely on.
const (
	inlineMaxSize     = 64 << 10  // PROTO_INLINE_MAX_SIZE: inline line, or a '*'/'$' count line
	maxBulkLen        = 512 << 20 // proto-max-bulk-len default
	queryBufferLimit  = 1 << 30   // client-query-buffer-limit default
	minReaderLimit    = 1 << 20   // the least either may be set to (Redis's bounds)
	maxMultibulkLen   = 1<<31 - 1 // INT_MAX
	unauthMaxArgs     = 10        // multibulk count allowed before AUTH
	unauthMaxBulkLen  = 16384     // bulk length allowed before AUTH
	readChunk         = 16 << 10  // bytes asked of the socket per read
	initialReadBuffer = 16 << 10
)

// protocolError is a malformed request: the reply is "-ERR Protocol error: "
// + msg and the connection is closed after it, as Redis does.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "ERR Protocol error: " + e.msg }

var (
	errInvalidMultibulk  = &protocolError{"invalid multibulk length"}
	errInvalidBulk       = &protocolError{"invalid bulk length"}
	errTooBigInline      = &protocolError{"too big inline request"}
	errTooBigMbulkCount  = &protocolError{"too big mbulk count string"}
	errTooBigBulkCount   = &protocolError{"too big bulk count string"}
	errUnbalancedQuotes  = &protocolError{"unbalanced quotes in request"}
	errUnauthMultibulk   = &protocolError{"unauthenticated multibulk length"}
	errUnauthBulk        = &protocolError{"unauthenticated bulk length"}
	errIncompleteCommand = errors.New("incomplete command")
	// errQueryBufferFull: the client's unparsed input reached
	// client-query-buffer-limit; Redis closes such a client without a
	// reply, and so does the server.
	errQueryBufferFull = errors.New("client reached client-query-buffer-limit")
)

// readerLimits are the reader's CONFIG SET limits, shared by every
// connection's reader (the server's runtimeParams own them). Any goroutine.
type readerLimits struct {
	maxBulk  atomic.Int64 // proto-max-bulk-len: the longest argument
	maxQuery atomic.Int64 // client-query-buffer-limit: unparsed input held at most
}

func newReaderLimits() *readerLimits {
	l := &readerLimits{}
	l.maxBulk.Store(maxBulkLen)
	l.maxQuery.Store(queryBufferLimit)
	return l
}

// command is one parsed request. Args alias the reader's buffer and stay
// valid until the next call to reader.next.
type command struct {
	args [][]byte
}

// reader parses RESP multibulk and inline requests from a connection the way
// Redis's networking.c does, byte for byte where clients can tell: the same
// limits, the same error texts, '*0' and '*-1' ignored, nothing allocated
// from a declared length (the buffer grows only as bytes arrive).
//
// One goroutine (the connection's) uses a reader.
type reader struct {
	rd    io.Reader
	buf   []byte
	start int // first unparsed byte
	end   int // end of valid data
	// A multibulk command may arrive over many reads; its progress is kept
	// as offsets so the buffer can move under it.
	cmds []command
	args [][]byte
	mb   multibulkProgress
	// scanned is how far past start the line being parsed has already been
	// searched for its terminator, in vain: a line that arrives a byte at a
	// time is then searched once in all, not once per byte (a 60 KB line
	// fed bytewise cost 1.0–1.2 s of CPU). Offsets from start survive
	// compact; it is zero again whenever start moves.
	scanned int
	// authRequired applies Redis's limits for unauthenticated clients.
	authRequired func() bool
	// limits are proto-max-bulk-len and client-query-buffer-limit.
	limits *readerLimits
	// stopAfter reports whether next must return after this command: it
	// may change what authRequired answers (AUTH, HELLO, RESET), and
	// Redis executes each command before it parses the next.
	stopAfter func(args [][]byte) bool
}

// multibulkProgress is how far parseMultibulk got into a command that has
// not fully arrived: offsets relative to start, so the buffer may move.
type multibulkProgress struct {
	active bool
	left   int64 // arguments still to parse
	pos    int   // offset of the next '$' line from start
	offs   []int // (offset, length) of each parsed argument
}

// defaultReaderLimits are Redis's defaults, for readers made outside a
// server (tests).
var defaultReaderLimits = newReaderLimits()

func newReader(rd io.Reader) *reader {
	return &reader{rd: rd, buf: make([]byte, initialReadBuffer), authRequired: func() bool { return false }, stopAfter: func([][]byte) bool { return false },
		limits: defaultReaderLimits}
}

// next returns every complete command that has arrived, reading from the
// connection until there is at least one, or a protocol/IO error. Commands
// that precede a protocol error are returned together with it, so they are
// answered before the error, as in Redis.
func (r *reader) next() ([]command, error) {
	// The previous batch's args alias buf[:start]; they are dead now.
	r.compact()
	r.cmds, r.args = r.cmds[:0], r.args[:0]
	for {
		if err := r.parse(); err != nil {
			if errors.Is(err, errIncompleteCommand) {
				if len(r.cmds) > 0 {
					return r.cmds, nil
				}
			} else {
				return r.cmds, err
			}
		} else if len(r.cmds) > 0 {
			return r.cmds, nil
		}
		if err := r.fill(); err != nil {
			return r.cmds, err
		}
	}
}

// compact moves the unparsed tail to the front of the buffer.
func (r *reader) compact() {
	if r.start == r.end {
		r.start, r.end = 0, 0
		return
	}
	if r.start > 0 {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
	}
}

// fill reads more bytes, growing the buffer only when it is full of data
// that has actually arrived.
func (r *reader) fill() error {
	if r.start > 0 && len(r.cmds) == 0 {
		r.compact()
	}
	if len(r.buf)-r.end < readChunk/4 {
		if len(r.cmds) == 0 && r.start > 0 {
			r.compact()
		}
		if len(r.buf)-r.end < readChunk/4 {
			// The buffer only grows for input that has arrived and is not
			// parsed yet: bounded by client-query-buffer-limit.
			if int64(r.end-r.start) >= r.limits.maxQuery.Load() {
				return errQueryBufferFull
			}
			nb := make([]byte, max(2*len(r.buf), r.end+readChunk))
			copy(nb, r.buf[:r.end])
			// Parsed args still alias the old buffer; that is fine: it is
			// kept alive by them and never written again.
			r.buf = nb
		}
	}
	n, err := r.rd.Read(r.buf[r.end:])
	r.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// parse consumes complete commands from buf[start:end]. It stops after a
// command for which stopAfter is true, so that the command after it is
// parsed under the state that command leaves (see stopAfter).
func (r *reader) parse() error {
	for r.start < r.end {
		if n := len(r.cmds); n > 0 && r.stopAfter(r.cmds[n-1].args) {
			return errIncompleteCommand
		}
		var err error
		if r.buf[r.start] == '*' {
			err = r.parseMultibulk()
		} else {
			err = r.parseInline()
		}
		if err != nil {
			return err
		}
	}
	return errIncompleteCommand
}

// parseMultibulk parses one "*N\r\n$len\r\narg\r\n..." command, or returns
// errIncompleteCommand leaving start untouched until the whole command is
// there. Like Redis, a count line ends at the first '\r' (the byte after it
// is skipped unchecked), and the two bytes after a bulk are skipped unchecked.
func (r *reader) parseMultibulk() error {
	b := r.buf[r.start:r.end]
	if !r.mb.active {
		line, next, ok := r.crLine(b, 1)
		if !ok {
			if len(b) > inlineMaxSize {
				return errTooBigMbulkCount
			}
			return errIncompleteCommand
		}
		count, valid := string2ll(line)
		if !valid || count > maxMultibulkLen {
			return errInvalidMultibulk
		}
		if count > unauthMaxArgs && r.authRequired() {
			return errUnauthMultibulk
		}
		if count <= 0 { // "*0" and "*-10" are skipped, as Redis does
			r.start += next
			r.scanned = 0
			return nil
		}
		r.mb = multibulkProgress{active: true, left: count, pos: next, offs: r.mb.offs[:0]}
	}
	for r.mb.left > 0 {
		line, next, ok := r.crLine(b, r.mb.pos)
		if !ok {
			if len(b)-r.mb.pos > inlineMaxSize {
				return errTooBigBulkCount
			}
			return errIncompleteCommand
		}
		if c := b[r.mb.pos]; c != '$' {
			if c == 0 { // Redis's sdscatprintf text ends at the NUL
				return &protocolError{"expected '$', got '"}
			}
			return &protocolError{"expected '$', got '" + string(b[r.mb.pos:r.mb.pos+1]) + "'"}
		}
		n, valid := string2ll(line[1:])
		if !valid || n < 0 || n > r.limits.maxBulk.Load() {
			return errInvalidBulk
		}
		if n > unauthMaxBulkLen && r.authRequired() {
			return errUnauthBulk
		}
		if int64(len(b)-next) < n+2 {
			return errIncompleteCommand
		}
		r.mb.offs = append(r.mb.offs, next, int(n))
		r.mb.pos = next + int(n) + 2
		r.mb.left--
	}
	first := len(r.args)
	for i := 0; i < len(r.mb.offs); i += 2 {
		o, n := r.mb.offs[i], r.mb.offs[i+1]
		r.args = append(r.args, b[o:o+n:o+n])
	}
	r.start += r.mb.pos
	r.scanned = 0
	r.mb.active = false
	r.cmds = append(r.cmds, command{args: r.args[first:len(r.args):len(r.args)]})
	return nil
}

// crLine finds the line of b (the unparsed input) that begins at from: it
// ends at the first '\r', which must be followed by one more byte (the '\n',
// skipped unchecked as Redis does). next is the offset after that byte; ok
// is false while the line is incomplete. Bytes already searched for this
// line (scanned) are not searched again.
func (r *reader) crLine(b []byte, from int) (line []byte, next int, ok bool) {
	// A byte loop: these lines are a few bytes long, too short for
	// bytes.IndexByte's call to pay (BenchmarkReaderPipeline).
	for cr := max(from, r.scanned); cr < len(b); cr++ {
		if b[cr] == '\r' {
			if cr+1 >= len(b) {
				r.scanned = cr // found again at once when its '\n' arrives
				return nil, 0, false
			}
			return b[from:cr], cr + 2, true
		}
	}
	r.scanned = len(b)
	return nil, 0, false
}

// parseInline parses one inline command line ("PING\r\n", "set a b\n").
func (r *reader) parseInline() error {
	b := r.buf[r.start:r.end]
	nl := bytes.IndexByte(b[r.scanned:], '\n')
	if nl >= 0 {
		nl += r.scanned
	} else {
		r.scanned = len(b)
		if len(b) > inlineMaxSize {
			return errTooBigInline
		}
		return errIncompleteCommand
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	first := len(r.args)
	args, ok := splitArgs(line, r.args)
	if !ok {
		r.args = r.args[:first]
		return errUnbalancedQuotes
	}
	r.args = args
	r.start += nl + 1
	r.scanned = 0
	if len(r.args) > first {
		r.cmds = append(r.cmds, command{args: r.args[first:len(r.args):len(r.args)]})
	}
	return nil
}

// string2ll is Redis's strict integer parser (util.c): optional '-', no '+',
// no leading zeros (except "0" itself), digits only, within int64.
func string2ll(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<64-1)/10 {
			return 0, false
		}
		v *= 10
		if v > 1<<64-1-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// splitArgs splits an inline command line as Redis's sdssplitargs does, in
// place (package sdsargs): the results alias line.
func splitArgs(line []byte, args [][]byte) ([][]byte, bool) { return sdsargs.Split(line, args) }
