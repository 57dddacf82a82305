package forward

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

var secret = []byte("forwarding-test-secret-0123456789")

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// counterHandler is a tiny state machine: Throttle adds Args[0] to a
// per-key counter and answers the new value; reads answer it.
type counterHandler struct {
	mu      sync.Mutex
	counts  map[string]int64
	block   chan struct{} // when set, Propose waits on it
	entered chan struct{} // when set, Propose signals it first
	failure error
}

// Propose and Read answer through done from a goroutine of their own, as a
// group's completer would from its.
func (h *counterHandler) Propose(reqs []request.Request, res []request.Result, done func(error)) {
	go func() { done(h.propose(reqs, res)) }()
}

func (h *counterHandler) Read(reqs []request.Request, res []request.Result, done func(error)) {
	go func() { done(h.read(reqs, res)) }()
}

func (h *counterHandler) propose(reqs []request.Request, res []request.Result) error {
	if h.entered != nil {
		h.entered <- struct{}{}
	}
	if h.block != nil {
		<-h.block
	}
	if h.failure != nil {
		return h.failure
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range reqs {
		h.counts[string(reqs[i].Key)] += reqs[i].Args[0]
		res[i].SetInt(h.counts[string(reqs[i].Key)])
	}
	return nil
}

func (h *counterHandler) read(reqs []request.Request, res []request.Result) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range reqs {
		res[i].SetInt(h.counts[string(reqs[i].Key)])
	}
	return nil
}

func (h *counterHandler) Admin(cmd string, args []string) (string, error) {
	if cmd == "join" && len(args) == 2 {
		return "joined " + strings.Join(args, "@"), nil
	}
	return "", fmt.Errorf("bad admin call %s %v", cmd, args)
}

// setup runs a forward Server behind an authenticated mux and returns a
// Client dialling through another mux with the same secret.
func setup(t *testing.T, h Handler) (*Client, string, *Server) {
	t.Helper()
	newMux := func() *mux.Mux {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m, err := mux.New(ln, mux.Config{Secret: secret, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	leader := newMux()
	fwdLn, err := leader.Listen(mux.HeaderForward)
	if err != nil {
		t.Fatal(err)
	}
	go leader.Run()
	srv := NewServer(func(id slots.GroupID) Handler {
		if id != 0 {
			return nil
		}
		return h
	}, quiet())
	go srv.Serve(fwdLn)
	t.Cleanup(srv.Close)

	follower := newMux()
	c := NewClient(func(addr string, timeout time.Duration) (net.Conn, error) {
		return follower.Dial(addr, mux.HeaderForward, timeout)
	})
	t.Cleanup(c.Close)
	return c, leader.Addr().String(), srv
}

func incr(key string, by int64) request.Request {
	r := request.Request{Code: request.Throttle, Key: []byte(key)}
	r.SetArgs(by)
	return r
}

func TestManyCallersShareTheConnections(t *testing.T) {
	h := &counterHandler{counts: map[string]int64{}}
	c, addr, _ := setup(t, h)
	const callers, perCaller = 50, 40
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", g)
			for i := 1; i <= perCaller; i++ {
				reqs := []request.Request{incr(key, 1), incr("shared", 1)}
				res := make([]request.Result, 2)
				if err := c.Propose(addr, 0, reqs, res, 10*time.Second, nil); err != nil {
					errs <- err
					return
				}
				if res[0].Kind != request.KindInt || res[0].Ints[0] != int64(i) {
					errs <- fmt.Errorf("caller %d call %d: own counter %+v", g, i, res[0])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	res := make([]request.Result, 1)
	if err := c.Read(addr, 0, []request.Request{incr("shared", 0)}, res, 10*time.Second, nil); err != nil || res[0].Ints[0] != callers*perCaller {
		t.Fatalf("shared counter %+v, %v; want %d", res[0], err, callers*perCaller)
	}
	c.mu.Lock()
	n := len(c.pools[addr].conns)
	c.mu.Unlock()
	if n > ConnsPerDestination {
		t.Errorf("%d connections to one destination, want at most %d", n, ConnsPerDestination)
	}
}

func TestMultiKeyRequestsAndAdminCalls(t *testing.T) {
	h := &counterHandler{counts: map[string]int64{}}
	c, addr, _ := setup(t, h)
	del := request.Request{Code: request.Del, Keys: [][]byte{[]byte("a"), []byte("bb"), nil}}
	res := make([]request.Result, 1)
	if err := c.Propose(addr, 0, []request.Request{del}, res, 5*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	text, err := c.Admin(addr, 0, "join", []string{"n2", "127.0.0.1:7000"}, 5*time.Second)
	if err != nil || text != "joined n2@127.0.0.1:7000" {
		t.Fatalf("admin: %q, %v", text, err)
	}
	_, err = c.Admin(addr, 0, "remove", nil, 5*time.Second)
	var f *request.Failure
	if !errors.As(err, &f) || f.Code != request.FailRefused || !strings.Contains(f.Detail, "bad admin call") {
		t.Fatalf("failing admin call: %v", err)
	}
}

// TestFailuresArriveAsTheyAre: the leader's *request.Failure reaches the
// caller with its code and detail unchanged (no mapping on either side);
// any other error of a batch call arrives as an unknown outcome.
func TestFailuresArriveAsTheyAre(t *testing.T) {
	for _, tc := range []struct {
		failure error
		want    *request.Failure
	}{
		{request.NotLeaderAt("127.0.0.1:7001"), request.NotLeaderAt("127.0.0.1:7001")},
		{fmt.Errorf("wrapped: %w", request.ErrNotReady), &request.Failure{Code: request.FailNotReady}},
		{request.DiskFull("/data has 1 MiB free"), request.DiskFull("/data has 1 MiB free")},
		{request.Removed("n3"), request.Removed("n3")},
		{errors.New("raft said no"), &request.Failure{Code: request.FailOutcomeUnknown, Detail: "raft said no"}},
	} {
		h := &counterHandler{counts: map[string]int64{}, failure: tc.failure}
		c, addr, _ := setup(t, h)
		err := c.Propose(addr, 0, []request.Request{incr("k", 1)}, make([]request.Result, 1), 5*time.Second, nil)
		var f *request.Failure
		if !errors.As(err, &f) || *f != *tc.want {
			t.Errorf("handler failed with %v: got %#v, want %#v", tc.failure, err, tc.want)
		}
	}
}

// TestUnknownGroupIsRefused: a call naming a Raft group the receiver does
// not run is answered FailUnknownGroup, and nothing reaches a handler.
func TestUnknownGroupIsRefused(t *testing.T) {
	h := &counterHandler{counts: map[string]int64{}}
	c, addr, _ := setup(t, h)
	err := c.Propose(addr, 7, []request.Request{incr("k", 1)}, make([]request.Result, 1), 5*time.Second, nil)
	if !errors.Is(err, request.ErrUnknownGroup) || !strings.Contains(err.Error(), "7") {
		t.Fatalf("call to group 7: %v, want FailUnknownGroup naming it", err)
	}
	if _, err := c.Admin(addr, 3, "join", []string{"n2", "x"}, 5*time.Second); !errors.Is(err, request.ErrUnknownGroup) {
		t.Fatalf("admin call to group 3: %v, want FailUnknownGroup", err)
	}
	if len(h.counts) != 0 {
		t.Fatalf("a call to an unknown group reached the handler: %v", h.counts)
	}
}

// A call whose frame was written and whose connection then breaks has an
// unknown outcome (ErrLost); a call that could not be sent is ErrNotSent.
func TestLostAndUnsentCalls(t *testing.T) {
	h := &counterHandler{counts: map[string]int64{}, block: make(chan struct{}), entered: make(chan struct{}, 1)}
	c, addr, srv := setup(t, h)
	done := make(chan error, 1)
	go func() {
		done <- c.Propose(addr, 0, []request.Request{incr("k", 1)}, make([]request.Result, 1), 10*time.Second, nil)
	}()
	<-h.entered // the server holds the call: cut every connection
	h.entered = nil
	srv.mu.Lock()
	for conn := range srv.conns {
		conn.Close()
	}
	srv.mu.Unlock()
	if err := <-done; !errors.Is(err, ErrLost) {
		t.Fatalf("call on a broken connection: %v, want ErrLost", err)
	}
	close(h.block)

	// Nobody listening: not sent.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	err := c.Propose(dead, 0, []request.Request{incr("k", 1)}, make([]request.Result, 1), time.Second, nil)
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("call to a closed port: %v, want ErrNotSent", err)
	}
	// And the client recovers: a new connection to the live server works.
	if err := c.Propose(addr, 0, []request.Request{incr("k", 1)}, make([]request.Result, 1), 10*time.Second, nil); err != nil {
		t.Fatalf("call after the breakage: %v", err)
	}
}

func TestTimeoutIsLost(t *testing.T) {
	h := &counterHandler{counts: map[string]int64{}, block: make(chan struct{})}
	defer close(h.block)
	c, addr, _ := setup(t, h)
	err := c.Propose(addr, 0, []request.Request{incr("k", 1)}, make([]request.Result, 1), 100*time.Millisecond, nil)
	if !errors.Is(err, ErrLost) {
		t.Fatalf("a call past its timeout: %v, want ErrLost", err)
	}
}

// A call to a destination the caller gives up on (it no longer leads) ends
// at once: lost if its frame was sent, not sent otherwise.
func TestAbandonedCallEndsAtOnce(t *testing.T) {
	h := &counterHandler{counts: map[string]int64{}, block: make(chan struct{}), entered: make(chan struct{}, 1)}
	defer close(h.block)
	c, addr, _ := setup(t, h)
	abandon := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- c.Propose(addr, 0, []request.Request{incr("k", 1)}, make([]request.Result, 1), time.Minute, abandon)
	}()
	<-h.entered
	close(abandon)
	select {
	case err := <-done:
		if !errors.Is(err, ErrLost) {
			t.Fatalf("abandoned call: %v, want ErrLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an abandoned call did not end")
	}
}
