package forward

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/redcell/redcell/request"
)

// Handler executes forwarded calls on the receiving node. It must not
// forward them again: a call that reaches a node that does not lead fails
// with an error that Classify maps to CodeNotLeader, and the sender looks
// for the leader itself. That keeps forwarding one hop and loop-free.
//
// Goroutines: the Server calls Handler methods from many goroutines at once
// (one per call in flight); each may block until its requests are committed.
// Keys in reqs alias the frame and are valid until the method returns.
type Handler interface {
	Propose(reqs []request.Request, res []request.Result) error
	Read(reqs []request.Request, res []request.Result) error
	// Admin runs a cluster administration command (the first word, e.g.
	// "join") with its arguments and returns its text answer.
	Admin(cmd string, args []string) (string, error)
}

// maxCallsPerConn bounds the calls one connection may have in flight on
// the server. A follower has one call per client connection waiting at
// most, so this is generous; beyond it the reader stops reading, which
// pushes back on the sender through TCP.
const maxCallsPerConn = 4096

// Server answers forwarded calls arriving on authenticated peer connections.
//
// Goroutines: Serve runs the accept loop; each connection has a reader
// goroutine, a writer goroutine, and one goroutine per call in flight.
// Close may be called from any goroutine.
type Server struct {
	h        Handler
	classify func(error) Code
	log      *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewServer makes a server. classify maps a Handler error to the Code the
// sender sees.
func NewServer(h Handler, classify func(error) Code, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{h: h, classify: classify, log: log, conns: make(map[net.Conn]struct{})}
}

// Serve accepts connections from ln until it fails or the server closes.
func (s *Server) Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Close closes every connection and waits for their calls to finish; calls
// still in their Handler get their answer first (the Handler is stopped
// by its owner), and the answer is dropped with the connection.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serveConn reads frames, runs each call in its own goroutine and writes the
// answers through one writer goroutine, which flushes once per burst.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	out := make(chan []byte, 256)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop(c, out)
	}()
	var calls sync.WaitGroup
	slots := make(chan struct{}, maxCallsPerConn)
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		id, kind, payload, _, err := readFrame(r, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("forwarding connection ended", "remote", c.RemoteAddr().String(), "err", err)
			}
			break
		}
		slots <- struct{}{}
		calls.Add(1)
		go func() {
			defer calls.Done()
			out <- s.answer(id, kind, payload)
			<-slots
		}()
	}
	calls.Wait()
	close(out)
	<-writerDone
}

func (s *Server) writeLoop(c net.Conn, out <-chan []byte) {
	w := bufio.NewWriterSize(c, 64<<10)
	broken := false
	for frame := range out {
		if broken {
			continue // drain, so callers never block on a dead connection
		}
		_, err := w.Write(frame)
		for more := true; more && err == nil; {
			select {
			case f, ok := <-out:
				if !ok {
					more = false
					break
				}
				_, err = w.Write(f)
			default:
				more = false
			}
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			broken = true
			c.Close()
		}
	}
}

// answer runs one call and returns its response frame. The frame owns its
// memory: the call's payload (and the keys aliasing it) is not used after.
func (s *Server) answer(id uint64, kind byte, payload []byte) []byte {
	body, err := s.run(kind, payload)
	if err != nil {
		var re *RemoteError
		code, text := CodeFailed, err.Error()
		if errors.As(err, &re) {
			code = re.Code
		} else if s.classify != nil {
			code = s.classify(err)
		}
		body = appendError(nil, code, text)
	}
	return appendFrame(nil, id, body)
}

func (s *Server) run(kind byte, payload []byte) ([]byte, error) {
	switch kind {
	case kindPropose, kindRead:
		reqs, err := decodeRequests(payload, nil)
		if err != nil {
			return nil, &RemoteError{Code: CodeFailed, Text: err.Error()}
		}
		res := make([]request.Result, len(reqs))
		if kind == kindPropose {
			err = s.h.Propose(reqs, res)
		} else {
			err = s.h.Read(reqs, res)
		}
		if err != nil {
			return nil, err
		}
		return appendResults([]byte{statusOK}, res), nil
	case kindAdmin:
		words, err := decodeAdmin(payload)
		if err != nil || len(words) == 0 {
			return nil, &RemoteError{Code: CodeFailed, Text: "corrupt admin call"}
		}
		text, err := s.h.Admin(words[0], words[1:])
		if err != nil {
			return nil, err
		}
		return appendString([]byte{statusOK}, text), nil
	}
	return nil, &RemoteError{Code: CodeFailed, Text: "unknown call kind"}
}

func appendAdmin(b []byte, words []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(words)))
	for _, w := range words {
		b = appendString(b, w)
	}
	return b
}

func decodeAdmin(payload []byte) ([]string, error) {
	n, w := binary.Uvarint(payload)
	if w <= 0 || n > uint64(len(payload)) {
		return nil, errors.New("forward: corrupt admin call")
	}
	rest := payload[w:]
	words := make([]string, 0, n)
	for i := uint64(0); i < n; i++ {
		var s string
		var err error
		if s, rest, err = readString(rest); err != nil {
			return nil, err
		}
		words = append(words, s)
	}
	return words, nil
}
