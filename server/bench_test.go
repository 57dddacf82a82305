package server

import (
	"fmt"
	"strings"
	"testing"
)

// loopReader returns the same pipeline on every Read, as a client that
// pipelines the same batch again and again would.
type loopReader struct{ p []byte }

func (l *loopReader) Read(b []byte) (int, error) { return copy(b, l.p), nil }

// BenchmarkReaderPipeline parses one read of 16 pipelined CL.THROTTLE
// commands (what redis-benchmark -P 16 sends) per op.
func BenchmarkReaderPipeline(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 16; i++ {
		key := fmt.Sprintf("user:%06d", i*7919)
		sb.WriteString(encodeCmd("CL.THROTTLE", key, "15", "30", "60", "1"))
	}
	pipeline := []byte(sb.String())
	r := newReader(&loopReader{p: pipeline})
	b.SetBytes(int64(len(pipeline)))
	b.ReportAllocs()
	for b.Loop() {
		cmds, err := r.next()
		if err != nil || len(cmds) != 16 {
			b.Fatalf("next = %d commands, %v", len(cmds), err)
		}
	}
}

// BenchmarkReaderManyArgs is the quadratic case of TestReaderLinearInArgs:
// one 1 MB multibulk of empty arguments arriving in 16 KB reads.
func BenchmarkReaderManyArgs(b *testing.B) {
	n := 1 << 20 / 6
	input := []byte(fmt.Sprintf("*%d\r\n%s", n, strings.Repeat("$0\r\n\r\n", n)))
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	for b.Loop() {
		r := newReader(&chunkReader{data: input, next: func() int { return 16 << 10 }})
		if cmds, err := r.next(); err != nil || len(cmds) != 1 {
			b.Fatalf("next = %d commands, %v", len(cmds), err)
		}
	}
}
