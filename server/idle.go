package server

import (
	"time"
)

// idleCloser closes clients idle for longer than the timeout parameter
// (CONFIG SET timeout, seconds; 0 = never), as Redis's clientsCron does:
// a client is idle since the last time it sent a command. It checks once
// per tick, so a client goes between timeout and timeout plus one tick after
// its last command.
//
// A client is closed the way Server.Close closes it: a read deadline in the
// past, so a pipeline it is executing still gets every answer, and then the
// connection ends. (Redis skips clients blocked in a command; a Redcell
// client whose last pipeline has been waiting longer than the timeout, which
// takes a leader lost for that long, is closed once it is answered.)
type idleCloser struct {
	stop chan struct{}
	done chan struct{}
}

func startIdleCloser(s *Server, every time.Duration) *idleCloser {
	ic := &idleCloser{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(ic.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ic.stop:
				return
			case now := <-tick.C:
				s.closeIdle(now)
			}
		}
	}()
	return ic
}

func (ic *idleCloser) close() {
	close(ic.stop)
	<-ic.done
}

// closeIdle closes the clients whose last command is more than the timeout
// ago (on the monotonic clock; now is only the deadline their reads get).
func (s *Server) closeIdle(now time.Time) {
	timeout := time.Duration(s.params.idleTimeout.Load()) * time.Second
	if timeout <= 0 {
		return
	}
	s.forEachConn(func(c *conn) {
		if time.Duration(monoNow()-c.lastActive.Load()) > timeout {
			s.log.Debug("closing an idle client", "id", c.id, "addr", c.addr, "timeout", timeout)
			_ = c.nc.SetReadDeadline(now)
		}
	})
}
