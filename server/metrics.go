package server

import (
	"bytes"
	"time"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// What the server records for package metrics (Config.Metrics; nil: off,
// and each hook returns at once). Both hooks run on the connection's
// goroutine, allocate nothing, and cost a few atomic adds per pipeline
// (TestConnPipelineDoesNotAllocate runs with metrics on).

// timeCommands records the latency of the commands of a pipeline whose
// replies are now ready: from the pipeline's read (readAt, which serve
// set then, on the monotonic clock: a step of the wall clock does not
// skew it) to now, for each command. The replies of a pipeline leave in
// one write, so that is what each of its calls waits in the server.
// Consecutive calls of one command (a pipeline of CL.THROTTLE) are one
// lookup and one observation of n. Label values come from the command
// table only: a name it does not know is recorded as "unknown". Commands
// after a QUIT or a protocol error in the same read are counted too.
func (c *conn) timeCommands(cmds []command) {
	m := c.s.cfg.Metrics
	if m == nil || len(cmds) == 0 {
		return
	}
	took := time.Duration(monoNow() - c.readAt)
	label, n := 0, 0
	var name []byte
	for i := range cmds {
		a := cmds[i].args[0]
		if n > 0 && bytes.Equal(a, name) {
			n++
			continue
		}
		if n > 0 {
			m.ObserveN(label, took, n)
		}
		label, name, n = m.Label(commands.Lookup(a, &c.scratch)), a, 1
	}
	m.ObserveN(label, took, n)
}

// countDecisions counts the decisions of a run answered by the backend
// (res, or all failed with err) by family and outcome, as the client sees
// them (metrics.Commands.CountDecisions). Counted here, where the reply is
// written, rather than in the state machine: each decision is counted once
// in the cluster, on the node its client is connected to (a follower's
// forwarded ones included), a replay after a restart counts nothing, and a
// batch failure (CLUSTERDOWN, TRYAGAIN) counts as the error the client got.
func (c *conn) countDecisions(reqs []request.Request, res []request.Result, err error) {
	if m := c.s.cfg.Metrics; m != nil {
		m.CountDecisions(reqs, res, err)
	}
}

// ConnectedClients is INFO's connected_clients, for the metrics.
func (s *Server) ConnectedClients() int { return s.clientCount() }

// BusyPolling reports whether a connection that has answered may spin for
// its client's next request now (INFO busy_poll_active, the metrics): a
// budget, a machine with more than one CPU, and the judge has not paused it
// (busypoll_linux.go). It says nothing of whether the node is quiet enough
// at this moment.
func (s *Server) BusyPolling() bool { return s.busy != nil && !s.busy.paused.Load() }
