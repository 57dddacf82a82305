package server

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzReader feeds arbitrary bytes in arbitrary chunkings. The reader must
// never panic, must give the same commands and final error whatever the
// chunking, must produce no more argument bytes than it was given (every
// argument byte comes from one input byte), and must allocate no more than
// a small multiple of the input (nothing from a declared length).
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"PING\r\n", "*1\r\n$4\r\nPING\r\n", "*3000000000\r\n", "*-1\r\n*0\r\n\r\nPING\n",
		"*2\r\n$4\r\nECHO\r\n$536870912\r\nab", "*1\r\nfoo\r\n", "set \"\"\"a\"\"\" b\r\n",
		"ECHO \"\\x41\\n\" 'a\\'b'\n", "*2\r\n$1\r\na\r\n$-1\r\n", "*1\r\n$0\r\n\r\n", "a\x00b\r\n",
		"*1\rX$4\r\nPINGxy", "*2147483647\r\n$0\r\n\r\n$0\r\n\r\n",
	} {
		f.Add([]byte(s), uint64(1), false)
	}
	f.Fuzz(func(t *testing.T, input []byte, seed uint64, auth bool) {
		want := readAll(wholeReader(input), auth)
		for name, rd := range map[string]io.Reader{
			"bytewise": byteReader(input),
			"random":   randomReader(input, seed),
		} {
			if got := readAll(rd, auth); got.String() != want.String() {
				t.Fatalf("input %q fed %s: %s; fed whole: %s", input, name, got, want)
			}
		}
		var pe *protocolError
		if !errors.Is(want.err, io.EOF) && !errors.As(want.err, &pe) {
			t.Fatalf("input %q: error %v is neither EOF nor a protocol error", input, want.err)
		}
		total := 0
		for _, c := range want.cmds {
			if len(c) == 0 {
				t.Fatalf("input %q: a command with no arguments", input)
			}
			for _, a := range c {
				total += len(a)
			}
		}
		if total > len(input) {
			t.Fatalf("input %q (%d bytes): %d argument bytes", input, len(input), total)
		}

		// Allocation, without the copies readAll makes.
		n := allocatedBytes(func() {
			r := newReader(randomReader(input, seed))
			r.authRequired = func() bool { return auth }
			for {
				cmds, err := r.next()
				if err != nil || len(cmds) == 0 {
					return
				}
			}
		})
		if limit := uint64(initialReadBuffer + 64<<10 + 64*len(input)); n > limit {
			t.Fatalf("input of %d bytes: the reader allocated %d bytes (limit %d)", len(input), n, limit)
		}
	})
}

// TestReaderAllocationIsLinear checks FuzzReader's allocation bound on the
// inputs that cost the reader most per byte: many tiny commands and many
// tiny arguments.
func TestReaderAllocationIsLinear(t *testing.T) {
	for _, input := range []string{
		strings.Repeat("a\n", 50000),
		"*100000\r\n" + strings.Repeat("$0\r\n\r\n", 100000),
		strings.Repeat("*1\r\n$0\r\n\r\n", 20000),
	} {
		n := allocatedBytes(func() {
			r := newReader(wholeReader([]byte(input)))
			for {
				cmds, err := r.next()
				if err != nil || len(cmds) == 0 {
					return
				}
			}
		})
		if limit := uint64(initialReadBuffer + 64<<10 + 64*len(input)); n > limit {
			t.Errorf("%.20q… (%d bytes): allocated %d bytes, limit %d", input, len(input), n, limit)
		}
	}
}
