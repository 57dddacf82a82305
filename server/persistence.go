package server

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redcell/redcell/commands"
)

// Redis's persistence commands on Redcell's persistence. Every decision is
// already durable in the Raft log before it is answered, so a "save" here
// is what keeps restarts short: a Raft snapshot of this node's state, after
// which the log behind it is compacted (Backend.Admin "snapshot", the path
// RAFT SNAPSHOT takes). Nothing is lost without one.

// persistState tracks the background save and the outcome of the last one.
type persistState struct {
	saving   atomic.Bool // a SAVE or BGSAVE is running
	lastFail atomic.Bool // the last BGSAVE failed (INFO rdb_last_bgsave_status)
	bg       sync.WaitGroup
}

const errSaveInProgress = "ERR Background save already in progress"

// SAVE
// Takes a Raft snapshot of this node's state now and compacts its log;
// answers +OK once it is on disk.
func cmdSave(c *conn, _ *commands.Spec, _ [][]byte) {
	p := &c.s.persist
	if !p.saving.CompareAndSwap(false, true) {
		c.fail(errSaveInProgress)
		return
	}
	defer p.saving.Store(false)
	if _, err := c.s.cfg.Backend.Admin(AdminSnapshot, nil); err != nil {
		c.s.log.Error("SAVE: snapshot failed", "err", err)
		c.fail(adminErrText(err))
		return
	}
	c.w.OK()
}

// BGSAVE [SCHEDULE]
// Starts a Raft snapshot of this node's state in the background; INFO
// persistence shows rdb_bgsave_in_progress and the outcome, LASTSAVE its
// time.
func cmdBgsave(c *conn, _ *commands.Spec, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !commands.EqualFold(args[1], "schedule")) {
		c.fail(commands.ErrSyntax)
		return
	}
	s := c.s
	if !s.persist.saving.CompareAndSwap(false, true) {
		c.fail(errSaveInProgress)
		return
	}
	s.persist.bg.Add(1)
	go func() {
		defer s.persist.bg.Done()
		defer s.persist.saving.Store(false)
		_, err := s.cfg.Backend.Admin(AdminSnapshot, nil)
		s.persist.lastFail.Store(err != nil)
		if err != nil {
			s.log.Error("BGSAVE: snapshot failed", "err", err)
			return
		}
		s.log.Info("BGSAVE: snapshot done")
	}()
	c.w.Simple("Background saving started")
}

// LASTSAVE
// Unix time of this node's newest snapshot; while it has none, the time the
// server started (as Redis, which counts its dataset as saved at startup:
// here everything is in the log).
func cmdLastsave(c *conn, _ *commands.Spec, _ [][]byte) { c.w.Int(c.s.lastSave()) }

// lastSave is LASTSAVE's answer.
func (s *Server) lastSave() int64 {
	text, err := s.cfg.Backend.Admin(AdminLastSave, nil)
	if err == nil {
		if t, perr := strconv.ParseInt(text, 10, 64); perr == nil && t > 0 {
			return t
		}
	}
	return s.started.Unix()
}

// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]
// Stops this node gracefully: a Raft snapshot first (unless NOSAVE, or
// while loading, as Redis skips saving then), then a leader hands its
// leadership to the most caught-up voter (unless NOW), then every
// connection gets its pending answers and the process exits 0. The caller
// gets no reply: its connection closes, as with Redis.
//
// The options as Redis 7.0 has them: NOSAVE skips the snapshot; SAVE is the
// default made explicit (Redis's SAVE saves even without save points; a
// snapshot is taken here either way). NOW skips the
// step Redis spends waiting for lagging replicas, which is here the
// leadership handover: the cluster then elects as after a crash. FORCE
// goes on when the snapshot fails (otherwise "-ERR Errors trying to
// SHUTDOWN. Check logs."). ABORT cancels a shutdown in progress in Redis;
// here the only step that waits is the handover, bounded by a few election
// timeouts and not cancellable, so ABORT answers that no shutdown is in
// progress, as Redis does when none is.
func cmdShutdown(c *conn, _ *commands.Spec, args [][]byte) {
	var nosave, save, now, force, abort, other bool
	for _, a := range args[1:] {
		switch {
		case commands.EqualFold(a, "nosave"):
			nosave = true
		case commands.EqualFold(a, "save"):
			save = true
		case commands.EqualFold(a, "now"):
			now, other = true, true
		case commands.EqualFold(a, "force"):
			force, other = true, true
		case commands.EqualFold(a, "abort"):
			abort = true
		default:
			c.fail(commands.ErrSyntax)
			return
		}
	}
	if (abort && (nosave || save || other)) || (nosave && save) {
		c.fail(commands.ErrSyntax)
		return
	}
	if abort {
		c.fail("ERR No shutdown in progress.")
		return
	}
	s := c.s
	if s.cfg.Shutdown == nil {
		c.fail("ERR SHUTDOWN is not available: this server was started without a way to stop its node")
		return
	}
	if !nosave && !s.cfg.Backend.Loading() {
		if _, err := s.cfg.Backend.Admin(AdminSnapshot, nil); err != nil {
			s.log.Error("SHUTDOWN: snapshot failed", "err", err, "force", force)
			if !force {
				c.fail("ERR Errors trying to SHUTDOWN. Check logs.")
				return
			}
		}
	}
	s.log.Info("SHUTDOWN requested by a client", "id", c.id, "addr", c.addr, "nosave", nosave, "now", now)
	c.answerPending()
	c.closeAfter = true
	s.cfg.Shutdown(!now)
}
