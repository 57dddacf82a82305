package server

import (
	"fmt"
	"net"
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

// nopConn is a net.Conn that discards what is written; reads are never made
// (the benchmarks below drive the reader themselves).
type nopConn struct{ net.Conn }

func (nopConn) Write(b []byte) (int, error) { return len(b), nil }
func (nopConn) Close() error                { return nil }
func (nopConn) LocalAddr() net.Addr         { return &net.TCPAddr{} }
func (nopConn) RemoteAddr() net.Addr        { return &net.TCPAddr{} }

// benchPipeline runs one connection's loop body — read a pipeline, execute
// its commands, answer the pending run, write the replies — once per op
// against srv, the same 16-command pipeline every time.
func benchPipeline(b *testing.B, srv *Server, cmd ...string) {
	var sb strings.Builder
	for i := 0; i < 16; i++ {
		args := append([]string{cmd[0], fmt.Sprintf("user:%06d", i*7919)}, cmd[1:]...)
		sb.WriteString(encodeCmd(args...))
	}
	c := srv.newConn(nopConn{})
	c.rd = newReader(&loopReader{p: []byte(sb.String())})
	run := func() {
		cmds, err := c.rd.next()
		if err != nil || len(cmds) != 16 {
			b.Fatalf("next = %d commands, %v", len(cmds), err)
		}
		for i := range cmds {
			c.exec(cmds[i].args)
		}
		c.answerPending()
		c.timeCommands(cmds) // as serve does (metrics.go; nothing without metrics)
		if c.s.stats.errors.Load() != 0 {
			b.Fatalf("a command failed: %q", c.w.B)
		}
		c.flush()
	}
	run() // warm the buffers
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}

// BenchmarkConnWritePipeline is one pipeline of 16 CL.THROTTLEs through a
// connection into a real single node (Pebble, fsync): the allocations per
// op are the connection's, the group's and raft's for one log entry.
func BenchmarkConnWritePipeline(b *testing.B) {
	n := startTestNode(b)
	benchPipeline(b, n.srv, "CL.THROTTLE", "15", "30", "60", "1")
}

// BenchmarkConnReadPipeline is one pipeline of 16 CL.PEEKs: one leadership
// check and 16 local reads.
func BenchmarkConnReadPipeline(b *testing.B) {
	n := startTestNode(b)
	benchPipeline(b, n.srv, "CL.PEEK", "15", "30", "60", "1")
}

// BenchmarkConnPipelineStub is BenchmarkConnWritePipeline in front of a
// backend that answers at once: the server's own cost of a pipeline.
func BenchmarkConnPipelineStub(b *testing.B) {
	benchPipeline(b, stubServer(b, &stubBackend{}), "CL.THROTTLE", "15", "30", "60", "1")
}
