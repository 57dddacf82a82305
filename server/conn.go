package server

import (
	"errors"
	"github.com/redcell/redcell/resp"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// conn is one client connection. Its goroutine runs serve; other goroutines
// only read the fields guarded by mu or held in atomics (CLIENT LIST, INFO).
type conn struct {
	s       *Server
	nc      net.Conn
	rd      *reader
	w       resp.Writer
	id      int64
	addr    string
	laddr   string
	created time.Time

	mu      sync.Mutex // guards name, libName, libVer
	name    string
	libName string
	libVer  string

	proto      atomic.Int32
	lastActive atomic.Int64 // monoNow of the last pipeline read (or the connection's creation)
	lastCmd    atomic.Pointer[commands.Spec]
	readAt     int64 // monoNow of the pipeline's read (serve's goroutine only)

	readonly   bool         // READONLY: reads answer from this node's own state
	tx         transaction  // MULTI ... EXEC (multi.go)
	watch      watchState   // WATCH's marks until EXEC (watch.go)
	authed     bool         // gave the password, or none was required (auth.go)
	trk        connTracking // CLIENT TRACKING, SUBSCRIBE (tracking.go)
	out        pushOut      // invalidation pushes; its wmu serialises socket writes
	closeAfter bool
	scratch    []byte
	stat       cmdTiming // commandstats, slow log, latency (cmdstats.go)

	// The pending run: consecutive writes (one Propose; reads that follow
	// them join it) or consecutive reads (one Read, one leadership check);
	// at most one of the two is non-empty.
	// Anything else first answers the run, so replies stay in request order.
	// The slices are reused for every run: no allocation per pipeline.
	writes []request.Request
	reads  []request.Request
	res    []request.Result

	// polled is the socket in the node's busy poll (busypoll_linux.go), nil
	// when it is not there; peeked reports bytes of the connection read
	// ahead before the server got it (the port's mux), which the poll
	// cannot see.
	polled syscall.RawConn
	peeked func() int
}

func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{
		s:       s,
		nc:      nc,
		rd:      newReader(nc),
		id:      s.nextID.Add(1),
		addr:    nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
		created: time.Now(),
	}
	c.w.Proto = 2
	c.proto.Store(2)
	c.lastActive.Store(monoNow())
	c.rd.limits = s.params.reader
	c.initAuth()
	if s.busy != nil {
		c.watchSocket()
	}
	return c
}

// watchSocket puts the connection's socket in the busy poll: a plain TCP
// or Unix socket, directly or under the port's mux; not TLS, whose reads
// are of records the poll cannot count.
func (c *conn) watchSocket() {
	sock := c.nc
	if m, ok := sock.(interface {
		Socket() net.Conn
		Buffered() int
	}); ok {
		sock, c.peeked = m.Socket(), m.Buffered
	}
	sc, ok := sock.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil || !c.s.busy.watch(rc, c.id) {
		return
	}
	c.polled = rc
}

// awaitInput spins for the client's next request while the node is quiet
// (busypoll_linux.go), when nothing of it is already here to parse.
func (c *conn) awaitInput() {
	if c.polled == nil || c.rd.start < c.rd.end || (c.peeked != nil && c.peeked() > 0) {
		return
	}
	c.s.busy.await(c.id)
}

// serve reads pipelines and answers them until the client leaves, sends
// QUIT, or breaks the protocol.
func (c *conn) serve() {
	defer c.nc.Close()
	if c.polled != nil {
		defer c.s.busy.unwatch(c.polled) // before the close: see unwatch
	}
	defer c.closeTracking()
	for {
		cmds, err := c.rd.next()
		if c.s.busy != nil {
			c.s.busy.active.Add(1) // until its replies are written
		}
		if len(cmds) > 0 {
			c.s.stats.commands.Add(int64(len(cmds)))
			c.readAt = monoNow() // metrics.go: latency on the monotonic clock
			c.lastActive.Store(c.readAt)
			c.stat.clock = c.readAt
		}
		for i := range cmds {
			c.exec(cmds[i].args)
			if c.closeAfter {
				break
			}
		}
		c.answerPending()
		c.timeCommands(cmds) // metrics.go
		if err != nil && !c.closeAfter {
			var pe *protocolError
			if errors.As(err, &pe) {
				c.fail(pe.Error())
			} else if errors.Is(err, errQueryBufferFull) {
				c.s.warnClient("closing client that reached max query buffer length", "id", c.id, "addr", c.addr,
					"limit", c.s.params.reader.maxQuery.Load())
			}
			c.closeAfter = true
		}
		flushed := c.flush()
		if c.s.busy != nil {
			c.s.busy.active.Add(-1)
		}
		if !flushed || c.closeAfter {
			return
		}
		c.awaitInput()
	}
}

// flush writes the buffered replies; false when the connection is broken.
func (c *conn) flush() bool {
	if len(c.w.B) == 0 && !c.out.pending.Load() {
		return true
	}
	c.out.wmu.Lock()
	err := c.writePushesFirst() // invalidations precede the replies after them
	n := 0
	if err == nil && len(c.w.B) > 0 {
		n, err = c.writeReplies(c.w.B)
	}
	c.out.wmu.Unlock()
	if errors.Is(err, errOutputLimit) {
		c.s.warnClient("client scheduled to be closed for overcoming of output buffer limits", "id", c.id, "addr", c.addr,
			"limit", c.s.params.outLimits.Load().normal)
	}
	c.s.stats.netOut.Add(int64(n))
	if cap(c.w.B) > 1<<20 { // do not keep a huge buffer after a big reply
		c.w.B = nil
	} else {
		c.w.B = c.w.B[:0]
	}
	return err == nil
}

// exec runs one command.
func (c *conn) exec(args [][]byte) {
	c.beginStats()
	c.execCommand(args)
	c.endStats(args)      // cmdstats.go
	c.endCommand(args[0]) // tracking.go: CLIENT CACHING lasts one command
}

// execCommand validates a command against the table, then either adds it to
// the pending run or answers it now.
func (c *conn) execCommand(args [][]byte) {
	spec := commands.Lookup(args[0], &c.scratch)
	if spec == nil {
		if commands.EqualFold(args[0], "post") || commands.EqualFold(args[0], "host:") {
			// Someone is speaking HTTP to us: Redis closes without a reply.
			c.s.warnClient("possible cross-protocol attack: closing connection", "addr", c.addr)
			c.answerPending()
			c.closeAfter = true
			return
		}
		c.reject(commands.UnknownCommand(args))
		return
	}
	spec = spec.ForArgs(args) // SCRIPT LOAD runs as a keyspace command
	c.lastCmd.Store(spec)
	c.stat.spec = spec
	if !spec.OwnArity && !spec.CheckArity(len(args)) {
		c.reject(commands.WrongArgs(spec.Name))
		return
	}
	if e := c.authError(spec, args); e != "" {
		c.reject(e)
		return
	}
	if e := c.subscribedRefusal(spec); e != "" {
		c.reject(e)
		return
	}
	if c.s.cfg.Backend.Loading() && !allowedWhileLoading(spec, args) {
		c.reject(commands.ErrLoading)
		return
	}
	if c.tx.active && !runsInsideMulti(spec) {
		c.enqueue(spec, args) // multi.go
		return
	}
	switch spec.Class {
	case commands.Write:
		var op request.Request
		if e := commands.ParseWrite(spec, args, &op); e != "" {
			c.answerPending()
			c.fail(e)
			return
		}
		if c.crossSlot(&op) { // slots.go
			c.answerPending()
			c.fail(commands.ErrCrossSlot)
			return
		}
		if !op.Code.IsWrite() {
			// EVAL of a script that declares itself read-only
			// (commands.NoWritesShebang): a read, without a log entry.
			c.queueRead(op)
			return
		}
		if len(c.reads) > 0 {
			c.answerPending()
		}
		c.writes = append(c.writes, op)
	case commands.Read:
		var r request.Request
		if e := commands.ParseRead(spec, args, &r); e != "" {
			c.answerPending()
			c.fail(e)
			return
		}
		if c.crossSlot(&r) { // slots.go
			c.answerPending()
			c.fail(commands.ErrCrossSlot)
			return
		}
		c.queueRead(r)
	default:
		c.answerPending()
		h := handlers[spec.Name]
		h(c, spec, args)
	}
}

// queueRead adds a parsed read to the pending run: behind writes of the
// same pipeline it rides in their entry, answered by the state machine in
// order, as EXEC's reads are (one commit for a rate limiter's ZADD,
// ZREMRANGEBYSCORE, ZCARD, EXPIRE instead of a commit and a leadership
// check per decision); otherwise it joins the run of reads.
func (c *conn) queueRead(r request.Request) {
	c.trackRead(&r) // before the read runs: see tracking.go
	if len(c.writes) > 0 && ridesWithWrites(r.Code) {
		c.writes = append(c.writes, r)
		return
	}
	if len(c.writes) > 0 {
		c.answerPending()
	}
	c.reads = append(c.reads, r)
}

// allowedWhileLoading reports whether a command runs while the node loads
// its state: as in Redis, those the table flags "loading" (PING, INFO, HELLO,
// CLIENT ..., COMMAND ...; for a container, its subcommand's flag decides).
// An unknown subcommand, or one with the wrong number of arguments, is
// allowed too, so that it gets the same error it would get otherwise: Redis
// checks both before it checks loading.
func allowedWhileLoading(spec *commands.Spec, args [][]byte) bool {
	if len(spec.Subs) > 0 && len(args) > 1 {
		sub := spec.Sub(args[1])
		if sub == nil || !sub.CheckArity(len(args)) {
			return true
		}
		spec = sub
	}
	for _, f := range spec.Flags {
		if f == "loading" {
			return true
		}
	}
	return false
}

func (c *conn) fail(text string) {
	c.noteError(text) // cmdstats.go
	c.w.Err(text)
}

// answerPending runs the pending run (blocking until it is decided) and
// writes its replies.
func (c *conn) answerPending() {
	switch {
	case len(c.writes) > 0:
		noloop := c.noloopBegin(c.writes)
		c.writes = c.answer(c.writes, c.s.cfg.Backend.Propose)
		if noloop {
			c.noloopEnd()
		}
	case len(c.reads) > 0 && c.readonly:
		c.reads = c.answer(c.reads, c.s.cfg.Backend.ReadLocal)
	case len(c.reads) > 0:
		c.reads = c.answer(c.reads, c.s.cfg.Backend.Read)
	}
}

// answer hands run to the backend's Propose or Read, writes one reply per
// request and returns run emptied for reuse.
func (c *conn) answer(run []request.Request, call func([]request.Request, []request.Result) error) []request.Request {
	if cap(c.res) < len(run) {
		c.res = make([]request.Result, len(run))
	}
	res := c.res[:len(run)]
	err := call(run, res)
	c.countDecisions(run, res, err) // metrics.go
	part := partialOf(err)
	for i := range run {
		switch {
		case part != nil && i < len(part.Errs) && part.Errs[i] != nil:
			c.fail(backendErrText(part.Errs[i]))
		case part == nil && err != nil:
			c.fail(backendErrText(err))
		default:
			c.writeResult(&res[i])
		}
	}
	c.recordRun(res, err) // cmdstats.go
	clear(run)            // drop references into the read buffer
	return run[:0]
}

// partialOf is err's *request.Partial (a call split over groups that
// failed in part), nil for any other error and for none; it allocates
// nothing when err is nil.
func partialOf(err error) *request.Partial {
	if err == nil {
		return nil
	}
	var part *request.Partial
	if errors.As(err, &part) {
		return part
	}
	return nil
}

func (c *conn) writeResult(r *request.Result) {
	if c.w.Result(r) {
		return
	}
	if r.Kind == request.KindError {
		c.fail(commands.ResultError(r))
		return
	}
	c.fail(commands.ErrInternal)
}

// ridesWithWrites reports whether a read of this code may join the writes
// before it in their log entry. Not KEYS and SCAN: a read in an entry runs
// at apply on every replica, and theirs cost the whole keyspace (KEYS) or
// answer with a cursor only the node that runs it understands (SCAN, which
// then belongs to this node's own read path).
func ridesWithWrites(c request.Code) bool { return c != request.Keys && c != request.Scan }

// backendErrText turns a batch failure (see Backend) into the Redis error
// the client gets; commands.FailureReply is the one mapping.
func backendErrText(err error) string {
	return commands.FailureReply(request.AsFailure(err))
}

func (c *conn) setProto(p int) {
	c.w.Proto = p
	c.proto.Store(int32(p))
}
