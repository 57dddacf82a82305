package forward

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// Handler executes forwarded calls for one Raft group on the receiving
// node. It must not forward them again: a call that reaches a node that does
// not lead fails with request.FailNotLeader (or FailNoLeader), and the
// sender looks for the leader itself. That keeps forwarding one hop and
// loop-free. Failures are *request.Failure values, which the Server sends as
// they are (code byte and detail); any other error is sent as the
// request.AsFailure of it.
//
// Goroutines: the Server calls Propose and Read from a connection's reader
// goroutine; they must not block (queue the call and return). Each calls
// its done exactly once, from any goroutine (the group's completer, say),
// after res is filled or with the failure; done does not block. Keys in reqs
// alias the frame, which stays untouched until done is called. Admin may
// block for as long as a write: the Server calls it from a goroutine of its
// own per admin call (they are rare: joins, removals, transfers).
type Handler interface {
	Propose(reqs []request.Request, res []request.Result, done func(error))
	Read(reqs []request.Request, res []request.Result, done func(error))
	// Admin runs a cluster administration command (the first word, e.g.
	// "join") with its arguments and returns its text answer.
	Admin(cmd string, args []string) (string, error)
}

// Groups returns the Handler of the Raft group with the given id, or nil
// when this node runs no such group (the caller is answered
// request.FailUnknownGroup). Called from connection readers, any number at
// once; it must return promptly.
type Groups func(id slots.GroupID) Handler

// maxCallsPerConn bounds the calls one connection may have in flight on
// the server, answers not yet written included. A follower has one call per
// client connection waiting at most, so this is generous; beyond it the
// reader stops reading, which pushes back on the sender through TCP.
const maxCallsPerConn = 4096

// Server answers forwarded calls arriving on authenticated peer connections.
//
// Goroutines: Serve runs the accept loop; each connection has a reader
// goroutine, which decodes each call and hands it to its group's Handler
// without waiting, and a writer goroutine, which writes the answers the
// Handler's done callbacks queue and flushes once per burst. No goroutine
// is started per call (except per admin call). Close may be called from any
// goroutine.
type Server struct {
	groups Groups
	log    *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewServer makes a server that runs each call in the Handler groups
// returns for the group the call names.
func NewServer(groups Groups, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{groups: groups, log: log, conns: make(map[net.Conn]struct{})}
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

// serveConn reads frames and starts each call; answers reach the writer
// through out. A call holds a slot from when it is read until its answer is
// written, so out (maxCallsPerConn deep) never blocks a done callback.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	sc := &serverConn{
		s:     s,
		out:   make(chan []byte, maxCallsPerConn),
		slots: make(chan struct{}, maxCallsPerConn),
		pongs: make(chan uint64, 1),
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		sc.writeLoop(c)
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		id, kind, payload, _, err := readFrame(r, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("forwarding connection ended", "remote", c.RemoteAddr().String(), "err", err)
			}
			break
		}
		if kind == kindPing {
			sc.pong(id)
			continue
		}
		sc.slots <- struct{}{}
		sc.calls.Add(1)
		sc.start(id, kind, payload)
	}
	sc.calls.Wait()
	close(sc.out)
	<-writerDone
}

// serverConn is one connection's calls in flight.
type serverConn struct {
	s     *Server
	out   chan []byte   // answers for the writer
	slots chan struct{} // one per call read and not yet answered on the wire
	// pongs carries the IDs of pings to answer (forward/reach.go): answered
	// by the writer outside the slots, without a group, so that a leader
	// busy deciding still shows it is there. One waiting is enough: a
	// ping's only purpose is that something comes back, so when one is
	// queued a later one is dropped.
	pongs chan uint64
	calls sync.WaitGroup
}

// pong queues the answer to a ping, unless one is queued already. The
// reader's goroutine; never blocks.
func (sc *serverConn) pong(id uint64) {
	select {
	case sc.pongs <- id:
	default:
	}
}

// start runs one call: propose and read calls are handed to the group's
// Handler with a callback that queues the answer; the payload (which the
// requests' keys alias) is owned by the call until then.
func (sc *serverConn) start(id uint64, kind byte, payload []byte) {
	group, rest, err := readGroup(payload)
	if err != nil {
		sc.answer(id, nil, request.Refused(err.Error()))
		return
	}
	var h Handler
	if group <= math.MaxUint32 {
		h = sc.s.groups(slots.GroupID(group))
	}
	if h == nil {
		sc.answer(id, nil, &request.Failure{Code: request.FailUnknownGroup, Detail: strconv.FormatUint(group, 10)})
		return
	}
	switch kind {
	case kindPropose, kindRead:
		reqs, err := decodeRequests(rest, nil)
		if err != nil {
			sc.answer(id, nil, request.Refused(err.Error()))
			return
		}
		res := make([]request.Result, len(reqs))
		done := func(err error) { sc.answer(id, res, err) }
		if kind == kindPropose {
			h.Propose(reqs, res, done)
		} else {
			h.Read(reqs, res, done)
		}
	case kindAdmin:
		words, err := decodeAdmin(rest)
		if err != nil || len(words) == 0 {
			sc.answer(id, nil, request.Refused("corrupt admin call"))
			return
		}
		go func() {
			text, err := h.Admin(words[0], words[1:])
			if err != nil {
				var f *request.Failure
				if !errors.As(err, &f) {
					f = request.Refused(err.Error()) // the leader's reason, for the client
				}
				sc.answer(id, nil, f)
				return
			}
			sc.queue(sealFrame(appendString(startFrame(statusOK, len(text)+4), text), id))
		}()
	default:
		sc.answer(id, nil, request.Refused("unknown call kind"))
	}
}

// answer queues the response to a propose or read call (or any call's
// failure): the results, encoded once into the frame, or the failure as it
// is. Called from whichever goroutine finished the call.
func (sc *serverConn) answer(id uint64, res []request.Result, err error) {
	if err != nil {
		f := request.AsFailure(err)
		sc.queue(sealFrame(appendError(make([]byte, headroom, headroom+8+len(f.Detail)), f), id))
		return
	}
	sc.queue(sealFrame(appendResults(startFrame(statusOK, 16*len(res)), res), id))
}

func (sc *serverConn) queue(frame []byte) { sc.out <- frame }

// writeLoop writes answers, every one queued meanwhile per flush, and
// frees each call's slot once its answer is written (or dropped with a
// broken connection); pongs are written alongside and hold no slot.
func (sc *serverConn) writeLoop(c net.Conn) {
	w := bufio.NewWriterSize(c, 64<<10)
	broken := false
	written := 0
	write := func(f []byte) {
		if !broken {
			if _, err := w.Write(f); err != nil {
				broken = true
			}
		}
	}
	pong := func(id uint64) { write(sealFrame(startFrame(statusOK, 0), id)) }
	for open := true; open; {
		select {
		case frame, ok := <-sc.out:
			if !ok {
				return
			}
			write(frame)
			written++
		case id := <-sc.pongs:
			pong(id)
		}
		for more := true; more; {
			select {
			case f, ok := <-sc.out:
				if !ok {
					more, open = false, false
					break
				}
				write(f)
				written++
			case id := <-sc.pongs:
				pong(id)
			default:
				more = false
			}
		}
		if !broken && w.Flush() != nil {
			broken = true
		}
		if broken {
			c.Close() // the reader stops; queued answers are drained and dropped
		}
		for ; written > 0; written-- {
			<-sc.slots
			sc.calls.Done()
		}
	}
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
