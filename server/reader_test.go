package server

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/redcell/redcell/resp"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// The reader is tested against what Redis's networking.c answers (the
// "Malformed input" table of spec/protocol.md), fed through readers that
// split the stream in every way TCP may: whole, one byte at a time, and
// random chunks. Whatever the split, the commands and the final error must
// be the same.

// chunkReader hands out data in pieces of the sizes next() picks, then io.EOF.
type chunkReader struct {
	data []byte
	next func() int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.next(), len(p), len(r.data))
	n = max(n, 1)
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func wholeReader(b []byte) io.Reader {
	return &chunkReader{data: b, next: func() int { return len(b) }}
}
func byteReader(b []byte) io.Reader { return &chunkReader{data: b, next: func() int { return 1 }} }
func randomReader(b []byte, seed uint64) io.Reader {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &chunkReader{data: b, next: func() int {
		if rng.IntN(4) == 0 {
			return 1 + rng.IntN(3)
		}
		return 1 + rng.IntN(64)
	}}
}

// parsed is everything a reader produced from one stream: the commands (args
// copied, since they alias the reader's buffer) and the error that ended it.
type parsed struct {
	cmds [][]string
	err  error
}

// errText is the reply text of a protocol error, "EOF" for a clean end, or
// the error's text otherwise.
func (p parsed) errText() string {
	var pe *protocolError
	switch {
	case p.err == nil:
		return "<nil>"
	case errors.As(p.err, &pe):
		return pe.Error()
	case errors.Is(p.err, io.EOF):
		return "EOF"
	}
	return "other: " + p.err.Error()
}

func (p parsed) String() string { return fmt.Sprintf("%q then %s", p.cmds, p.errText()) }

// readAll runs the reader until it fails, as conn.serve does.
func readAll(rd io.Reader, authRequired bool) parsed {
	r := newReader(rd)
	if authRequired {
		r.authRequired = func() bool { return true }
	}
	var out parsed
	for i := 0; ; i++ {
		cmds, err := r.next()
		for _, c := range cmds {
			args := make([]string, len(c.args))
			for j, a := range c.args {
				args[j] = string(a)
			}
			out.cmds = append(out.cmds, args)
		}
		if err != nil {
			out.err = err
			return out
		}
		if len(cmds) == 0 {
			out.err = errors.New("next returned no command and no error")
			return out
		}
	}
}

// readAllWays parses input whole, byte by byte and in random chunks, fails
// the test if the results differ, and returns the result.
func readAllWays(t *testing.T, input []byte, authRequired bool) parsed {
	t.Helper()
	want := readAll(wholeReader(input), authRequired)
	ways := map[string]io.Reader{"bytewise": byteReader(input)}
	for seed := uint64(1); seed <= 3; seed++ {
		ways[fmt.Sprintf("random#%d", seed)] = randomReader(input, seed)
	}
	for name, rd := range ways {
		if got := readAll(rd, authRequired); got.String() != want.String() {
			t.Errorf("input %.200q: fed %s: %s; fed whole: %s", input, name, got, want)
		}
	}
	return want
}

func cmdsOf(lines ...string) [][]string {
	var out [][]string
	for _, l := range lines {
		out = append(out, strings.Split(l, "|"))
	}
	return out
}

const (
	errEOF              = "EOF"
	errTextInvalidMbulk = "ERR Protocol error: invalid multibulk length"
	errTextInvalidBulk  = "ERR Protocol error: invalid bulk length"
)

// TestReaderMalformedInput is every row of protocol.md's "Malformed input"
// table that the reader decides, plus the neighbouring cases that pin down
// Redis's integer syntax for counts.
func TestReaderMalformedInput(t *testing.T) {
	tests := []struct {
		name  string
		input string
		auth  bool
		want  [][]string // commands returned before the error
		err   string     // error reply text without '-', or EOF
	}{
		// Ignored.
		{name: "bare CRLF ignored", input: "\r\nPING\r\n", want: cmdsOf("PING"), err: errEOF},
		{name: "negative count ignored", input: "*-10\r\nPING\r\n", want: cmdsOf("PING"), err: errEOF},
		{name: "*-1 ignored", input: "*-1\r\nPING\r\n", want: cmdsOf("PING"), err: errEOF},
		{name: "zero count ignored", input: "*0\r\nPING\r\n", want: cmdsOf("PING"), err: errEOF},
		{name: "all three then PING", input: "\r\n*-10\r\n*0\r\n*1\r\n$4\r\nPING\r\n", want: cmdsOf("PING"), err: errEOF},

		// Multibulk count.
		{name: "count above INT_MAX", input: "*3000000000\r\n", err: errTextInvalidMbulk},
		{name: "count INT_MAX+1", input: "*2147483648\r\n", err: errTextInvalidMbulk},
		{name: "count not a number", input: "*abc\r\n", err: errTextInvalidMbulk},
		{name: "count empty", input: "*\r\n", err: errTextInvalidMbulk},
		{name: "count with plus", input: "*+1\r\n$4\r\nPING\r\n", err: errTextInvalidMbulk},
		{name: "count with leading zero", input: "*01\r\n$4\r\nPING\r\n", err: errTextInvalidMbulk},
		{name: "count minus zero", input: "*-0\r\n", err: errTextInvalidMbulk},
		{name: "count with space", input: "* 1\r\n", err: errTextInvalidMbulk},
		{name: "count beyond int64", input: "*99999999999999999999\r\n", err: errTextInvalidMbulk},
		{name: "count INT_MAX is valid (waits for args)", input: "*2147483647\r\n", err: errEOF},

		// Expected '$'.
		{name: "junk where a bulk belongs", input: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", err: "ERR Protocol error: expected '$', got 'f'"},
		{name: "no bulk header", input: "*1\r\nfoo\r\n", err: "ERR Protocol error: expected '$', got 'f'"},
		// Redis looks for the line's '\r' before it looks at its first byte:
		// without one it waits (and past 64 KB says the count is too big).
		{name: "no bulk header, line incomplete", input: "*1\r\nfoo", err: errEOF},
		{name: "no bulk header, over 64 KB", input: "*1\r\n" + strings.Repeat("f", 64<<10+1), err: "ERR Protocol error: too big bulk count string"},

		// Bulk length.
		{name: "bulk negative", input: "*1\r\n$-1\r\n", err: errTextInvalidBulk},
		{name: "bulk above 512MB", input: "*1\r\n$536870913\r\n", err: errTextInvalidBulk},
		{name: "bulk 512MB is valid (waits for data)", input: "*1\r\n$536870912\r\nabc", err: errEOF},
		{name: "bulk not a number", input: "*1\r\n$abc\r\n", err: errTextInvalidBulk},
		{name: "bulk empty", input: "*1\r\n$\r\n", err: errTextInvalidBulk},
		{name: "bulk with plus", input: "*1\r\n$+4\r\nPING\r\n", err: errTextInvalidBulk},
		{name: "bulk with leading zero", input: "*1\r\n$04\r\nPING\r\n", err: errTextInvalidBulk},
		{name: "bulk minus zero", input: "*1\r\n$-0\r\n\r\n", err: errTextInvalidBulk},

		// Quotes.
		{name: "unbalanced quotes", input: "set \"\"\"test-key\"\"\" test-value\r\n", err: "ERR Protocol error: unbalanced quotes in request"},
		{name: "unterminated double quote", input: "set \"abc\r\n", err: "ERR Protocol error: unbalanced quotes in request"},
		{name: "unterminated single quote", input: "set 'abc\r\n", err: "ERR Protocol error: unbalanced quotes in request"},
		{name: "closing quote followed by a letter", input: "set 'a'b\r\n", err: "ERR Protocol error: unbalanced quotes in request"},

		// Empty command name: the reader returns it, the server answers it.
		{name: "empty bulk as command", input: "*1\r\n$0\r\n\r\nPING\r\n", want: [][]string{{""}, {"PING"}}, err: errEOF},

		// Unauthenticated limits.
		{name: "unauth 10 args allowed", auth: true, input: "*10\r\n" + strings.Repeat("$1\r\na\r\n", 10), want: [][]string{strings.Split("a a a a a a a a a a", " ")}, err: errEOF},
		{name: "unauth 11 args refused", auth: true, input: "*11\r\n", err: "ERR Protocol error: unauthenticated multibulk length"},
		{name: "unauth bulk 16384 allowed", auth: true, input: "*1\r\n$16384\r\n" + strings.Repeat("x", 16384) + "\r\n", want: [][]string{{strings.Repeat("x", 16384)}}, err: errEOF},
		{name: "unauth bulk 16385 refused", auth: true, input: "*1\r\n$16385\r\n", err: "ERR Protocol error: unauthenticated bulk length"},
		{name: "authenticated 11 args fine", input: "*11\r\n" + strings.Repeat("$0\r\n\r\n", 11), want: [][]string{make([]string, 11)}, err: errEOF},
		{name: "invalid count wins over unauth", auth: true, input: "*3000000000\r\n", err: errTextInvalidMbulk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAllWays(t, []byte(tt.input), tt.auth)
			if fmt.Sprint(got.cmds) != fmt.Sprint(tt.want) || len(got.cmds) != len(tt.want) {
				t.Errorf("commands = %q, want %q", got.cmds, tt.want)
			}
			if got.errText() != tt.err {
				t.Errorf("error = %q, want %q", got.errText(), tt.err)
			}
		})
	}
}

// TestReaderExpectedDollarIsSanitised: Redis formats "got '%c'" through
// addReplyErrorFormat, which cuts the text at a NUL and turns CR/LF into
// spaces. A raw NUL in an error line is not what Redis sends.
func TestReaderExpectedDollarIsSanitised(t *testing.T) {
	tests := []struct{ input, want string }{
		{"*1\r\n\r\n", "ERR Protocol error: expected '$', got ' '"},              // CR -> space (redcon strips it)
		{"*1\r\n\x00\r\n", "ERR Protocol error: expected '$', got '"},            // C string ends at the NUL
		{"*2\r\n$1\r\na\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"}, // an integer is not a bulk
	}
	for _, tt := range tests {
		got := readAll(wholeReader([]byte(tt.input)), false)
		// What reaches the client is what resp.Writer.Err makes of the text.
		var w resp.Writer
		var pe *protocolError
		if !errors.As(got.err, &pe) {
			t.Errorf("%q: error %v, want a protocol error", tt.input, got.err)
			continue
		}
		w.Err(pe.Error())
		if want := "-" + tt.want + "\r\n"; string(w.B) != want {
			t.Errorf("%q: reply %q, want %q", tt.input, w.B, want)
		}
	}
}

// TestReaderTooBig checks the 64 KB limits at the exact boundary: Redis
// refuses once more than 64*1024 bytes are buffered without the line's end,
// counting from the start of the current line.
func TestReaderTooBig(t *testing.T) {
	const limit = 64 * 1024
	tests := []struct {
		name   string
		prefix string // bytes before the unterminated line
		line   byte   // the line's first byte
		fill   byte   // what the line continues with
		err    string
	}{
		{name: "inline", line: 'a', fill: 'a', err: "ERR Protocol error: too big inline request"},
		{name: "inline after a command", prefix: "PING\r\n", line: 'a', fill: 'a', err: "ERR Protocol error: too big inline request"},
		{name: "mbulk count", line: '*', fill: '1', err: "ERR Protocol error: too big mbulk count string"},
		{name: "bulk count", prefix: "*1\r\n", line: '$', fill: '1', err: "ERR Protocol error: too big bulk count string"},
		{name: "bulk count of a later arg", prefix: "*2\r\n$4\r\nPING\r\n", line: '$', fill: '1', err: "ERR Protocol error: too big bulk count string"},
	}
	for _, tt := range tests {
		for _, n := range []int{limit, limit + 1} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, n), func(t *testing.T) {
				line := append([]byte{tt.line}, bytes.Repeat([]byte{tt.fill}, n-1)...)
				input := append([]byte(tt.prefix), line...)
				want := errEOF
				if n > limit {
					want = tt.err
				}
				// Whole and in 4 KB chunks (bytewise would be slow and says nothing new here).
				for name, rd := range map[string]io.Reader{
					"whole": wholeReader(input),
					"4k":    &chunkReader{data: input, next: func() int { return 4096 }},
					"odd":   &chunkReader{data: input, next: func() int { return 4093 }},
				} {
					got := readAll(rd, false)
					if got.errText() != want {
						t.Errorf("%s: %d-byte line: error %q, want %q", name, n, got.errText(), want)
					}
					if tt.prefix == "PING\r\n" && (len(got.cmds) != 1 || got.cmds[0][0] != "PING") {
						t.Errorf("%s: commands before the error = %q, want [PING]", name, got.cmds)
					}
				}
			})
		}
	}
}

// TestReaderCommands checks well-formed multibulk and inline requests and
// that a pipeline split anywhere gives the same commands.
func TestReaderCommands(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  [][]string
	}{
		{"multibulk", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$0\r\n\r\n", [][]string{{"SET", "x", ""}}},
		{"binary bulk", "*2\r\n$4\r\nECHO\r\n$6\r\na\r\n\x00b\n\r\n", [][]string{{"ECHO", "a\r\n\x00b\n"}}},
		{"bulk terminator unchecked", "*1\r\n$4\r\nPINGxy*1\r\n$4\r\nPING\r\n", cmdsOf("PING", "PING")},
		{"count line LF unchecked", "*1\rX$4\r\nPING\r\n", cmdsOf("PING")},
		{"inline CRLF", "PING\r\n", cmdsOf("PING")},
		{"inline bare LF", "PING\nECHO a\n", cmdsOf("PING", "ECHO|a")},
		{"inline blanks", "  set   a \t b  \r\n", cmdsOf("set|a|b")},
		{"inline vertical tab and form feed separate only between words", "\x0bset a\x0bb\x0c\r\n", [][]string{{"set", "a\x0bb\x0c"}}},
		{"inline empty line ignored", "\r\n\n   \r\nPING\r\n", cmdsOf("PING")},
		{"inline double quotes", `set "a b" "c"` + "\r\n", [][]string{{"set", "a b", "c"}}},
		{"inline empty quotes", `set "" ''` + "\r\n", [][]string{{"set", "", ""}}},
		{"inline escapes in double quotes", `x "\n\r\t\b\a\\\"\q"` + "\r\n", [][]string{{"x", "\n\r\t\b\a\\\"q"}}},
		{"inline hex escapes", `x "\x41\x6a\xFF\x00\x0"` + "\r\n", [][]string{{"x", "Aj\xff\x00x0"}}},
		{"inline hex needs two digits", `x "\x4g"` + "\r\n", [][]string{{"x", "x4g"}}},
		{"inline single quotes keep backslashes", `x 'a\nb\'c\\ d'` + "\r\n", [][]string{{"x", `a\nb'c\\ d`}}},
		{"inline quote inside word", `x a"b c"d` + "\r\n", nil}, // unbalanced: checked below
		// Redis's strchr(querybuf, '\n') stops at a NUL, so Redis waits for
		// a newline that never comes (until 64 KB); Redcell finds the newline
		// and, as sdssplitargs does on a C string, drops the line after the NUL.
		{"inline NUL ends the line", "set a\x00b c\r\nPING\r\n", [][]string{{"set", "a"}, {"PING"}}},
		{"inline NUL at start yields nothing", "\x00set a\r\nPING\r\n", cmdsOf("PING")},
		{"inline CR inside the line separates", "a\rb\r\n", cmdsOf("a|b")},
		{"mixed pipeline", "PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nECHO 'x y'\n*0\r\n*1\r\n$4\r\nPING\r\n",
			[][]string{{"PING"}, {"ECHO", "hi"}, {"ECHO", "x y"}, {"PING"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAllWays(t, []byte(tt.input), false)
			if tt.want == nil {
				if got.errText() != "ERR Protocol error: unbalanced quotes in request" {
					t.Errorf("got %s, want unbalanced quotes", got)
				}
				return
			}
			if got.errText() != errEOF {
				t.Errorf("error %q, want EOF", got.errText())
			}
			if fmt.Sprintf("%q", got.cmds) != fmt.Sprintf("%q", tt.want) {
				t.Errorf("commands %q, want %q", got.cmds, tt.want)
			}
		})
	}
}

// TestReaderPipelineSplitEverywhere splits a mixed pipeline at every byte
// boundary (two reads), and in random chunkings, and expects the same
// commands each time.
func TestReaderPipelineSplitEverywhere(t *testing.T) {
	var b bytes.Buffer
	var want [][]string
	for i := 0; i < 12; i++ {
		key := fmt.Sprintf("key:%d\r\n\x00", i)
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "*6\r\n$11\r\nCL.THROTTLE\r\n$%d\r\n%s\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n$1\r\n1\r\n", len(key), key)
			want = append(want, []string{"CL.THROTTLE", key, "15", "30", "60", "1"})
		case 1:
			fmt.Fprintf(&b, "PTTL \"key:%d\\r\\n\\x00\"\r\n", i)
			want = append(want, []string{"PTTL", key})
		case 2:
			b.WriteString("*0\r\nPING\n\r\n")
			want = append(want, []string{"PING"})
		}
	}
	input := b.Bytes()
	wantS := fmt.Sprintf("%q", want)
	for cut := 0; cut <= len(input); cut++ {
		first := true
		rd := &chunkReader{data: input, next: func() int {
			if first {
				first = false
				return max(cut, 1)
			}
			return len(input)
		}}
		got := readAll(rd, false)
		if got.errText() != errEOF || fmt.Sprintf("%q", got.cmds) != wantS {
			t.Fatalf("cut at %d: %s", cut, got)
		}
	}
	for seed := uint64(0); seed < 50; seed++ {
		got := readAll(randomReader(input, seed), false)
		if got.errText() != errEOF || fmt.Sprintf("%q", got.cmds) != wantS {
			t.Fatalf("random chunking %d: %s", seed, got)
		}
	}
}

// TestReaderBatchesAPipeline: one read holding several commands yields them
// in one call, so the server makes one proposal per pipeline read.
func TestReaderBatchesAPipeline(t *testing.T) {
	r := newReader(wholeReader([]byte("PING\r\nPING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI")))
	cmds, err := r.next()
	if err != nil || len(cmds) != 3 {
		t.Fatalf("next = %d commands, %v; want 3, nil", len(cmds), err)
	}
	if cmds, err := r.next(); len(cmds) != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("second next = %d commands, %v; want 0, EOF", len(cmds), err)
	}
}

// TestReaderCommandsBeforeErrorComeWithIt: commands that precede a protocol
// error in the same read are returned with it, so they are answered first.
func TestReaderCommandsBeforeErrorComeWithIt(t *testing.T) {
	r := newReader(wholeReader([]byte("PING\r\nECHO a\r\n*abc\r\nPING\r\n")))
	cmds, err := r.next()
	var pe *protocolError
	if len(cmds) != 2 || !errors.As(err, &pe) || pe.Error() != errTextInvalidMbulk {
		t.Fatalf("next = %d commands, %v; want 2 commands and invalid multibulk length", len(cmds), err)
	}
}

// allocatedBytes is the heap allocated while fn runs (GC'd or not).
func allocatedBytes(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReaderNeverAllocatesFromADeclaredLength: a client declaring two
// billion arguments and a 512 MB bulk, then sending three bytes, must cost
// the server a few kilobytes, not gigabytes.
func TestReaderNeverAllocatesFromADeclaredLength(t *testing.T) {
	for _, input := range []string{
		"*2000000000\r\n$536870912\r\nabc",
		"*2147483647\r\n" + strings.Repeat("$0\r\n\r\n", 100) + "$536870912\r\nabc",
		"*1\r\n$536870912\r\n" + strings.Repeat("x", 100000),
	} {
		var got parsed
		n := allocatedBytes(func() { got = readAll(byteReader([]byte(input)), false) })
		if got.errText() != errEOF {
			t.Errorf("%.40q: error %q, want EOF", input, got.errText())
		}
		if limit := uint64(4<<20 + 8*len(input)); n > limit {
			t.Errorf("%.40q (%d bytes): allocated %d bytes, want < %d", input, len(input), n, limit)
		}
	}
}

// TestReaderLinearInArgs: a multibulk with many arguments arriving over many
// reads must cost time linear in its size. Redis keeps its place in a
// multibulk (multibulklen, bulklen, qb_pos) between reads; a reader that
// re-parses the command from its '*' line on every read is quadratic, and one
// client can burn a core with a few megabytes of "$0\r\n\r\n".
//
// The work is counted deterministically: with more than 10 arguments the
// reader asks authRequired once each time it parses the '*' line, so the
// number of calls is the number of times it started the command over.
func TestReaderLinearInArgs(t *testing.T) {
	const args = 20000
	input := []byte(fmt.Sprintf("*%d\r\n%s", args, strings.Repeat("$1\r\na\r\n", args)))
	// Feed 700-byte reads (100 args each): 200 reads. A reader that keeps
	// its progress looks at each argument header a bounded number of times;
	// one that restarts parses 100+200+...+20000 ≈ 2 million headers.
	rd := &countingChunkReader{chunkReader: chunkReader{data: input, next: func() int { return 700 }}}
	r := newReader(rd)
	restarts := 0
	r.authRequired = func() bool { restarts++; return false }
	cmds, err := r.next()
	if err != nil || len(cmds) != 1 || len(cmds[0].args) != args {
		t.Fatalf("next = %d commands, %v", len(cmds), err)
	}
	if restarts > 10 {
		t.Errorf("the multibulk header was parsed %d times over %d reads: the reader restarts the command from its start on every read (quadratic in its size); keep the parse position (next bulk offset, args parsed so far) between reads as Redis does", restarts, rd.reads)
	}
}

// TestReaderSearchesALineOnce: a line that arrives a byte at a time is
// searched for its end once in all, not from its start on every read, which
// made a 60 KB line sent bytewise cost 1.0–1.2 s of CPU (found while
// fuzzing FuzzReader). Deterministic and white-box: a terminator planted behind the
// reader in bytes it has already searched must stay unseen, where a reader
// that searches again from the line's start finds it (and returns a command or
// a protocol error).
func TestReaderSearchesALineOnce(t *testing.T) {
	for _, tc := range []struct {
		what, prefix string
		plant        byte
	}{
		{"inline line", "a", '\n'},
		{"'*' count line", "*", '\r'},
		{"'$' bulk line", "*1\r\n$", '\r'},
	} {
		src := &queueReader{}
		r := newReader(src)
		src.data = []byte(tc.prefix + "123")
		for _, more := range []string{"", "4", "5"} {
			src.data = append(src.data, more...)
			if cmds, err := r.next(); len(cmds) != 0 || err != errDrained {
				t.Fatalf("%s: %q so far gave %d commands, %v", tc.what, tc.prefix+"123"+more, len(cmds), err)
			}
		}
		r.buf[r.start+len(tc.prefix)] = tc.plant // the '1', searched already
		src.data = []byte("6")
		if cmds, err := r.next(); len(cmds) != 0 || err != errDrained {
			t.Errorf("%s: a terminator planted in bytes already searched was found (%d commands, %v): the reader searches the line again from its start on every read", tc.what, len(cmds), err)
		}
		// The line's real end still ends it.
		src.data = []byte("\r\n")
		if _, err := r.next(); err == errDrained {
			t.Errorf("%s: the line's real end was not found", tc.what)
		}
	}
}

var errDrained = errors.New("no more input yet")

// queueReader hands out whatever data holds, then errDrained until more is
// added: a connection on which the client has paused.
type queueReader struct{ data []byte }

func (r *queueReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errDrained
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

type countingChunkReader struct {
	chunkReader
	reads int
}

func (r *countingChunkReader) Read(p []byte) (int, error) {
	r.reads++
	return r.chunkReader.Read(p)
}
