package node

import (
	"fmt"
	"net"
	"time"

	"github.com/redcell/redcell/metrics"
	"github.com/redcell/redcell/raftstore"
)

// nodeMetrics is a node's Prometheus metrics and health endpoints
// (--metrics-addr; package metrics). The parts that record on the hot paths
// (the WAL's syncs, the state machine's apply, the server's commands) get
// their hooks while the node is assembled; the HTTP server starts last,
// once every part Status reads exists.
type nodeMetrics struct {
	m        *metrics.Metrics
	commands *metrics.Commands // the server's (server.Config.Metrics)
	ln       net.Listener      // bound at start, served once the node is assembled
	srv      *metrics.Server
}

// openMetrics listens on addr (right after the client port, so that a taken
// port fails the start before anything is written) and builds the registry
// over n's status. nil without an address.
func openMetrics(n *Node, addr string) (*nodeMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	cmds := metrics.NewCommands()
	m := metrics.New(metrics.Config{
		Status:      nodeStatus{n},
		Clients:     func() int { return n.srv.ConnectedClients() },
		BusyPolling: func() bool { return n.srv.BusyPolling() },
		MaxMemory:   n.maxMemory.Load,
	}, cmds)
	return &nodeMetrics{m: m, commands: cmds, ln: ln}, nil
}

// storeOptions adds the store's hooks to opts.
func (nm *nodeMetrics) storeOptions(opts raftstore.Options) raftstore.Options {
	if nm != nil {
		opts.ObserveWALSync, opts.ObserveSnapshot = nm.m.ObserveWALSync, nm.m.ObserveSnapshot
	}
	return opts
}

// applyHook is the state machine's ObserveApply (nil without metrics).
func (nm *nodeMetrics) applyHook() func(time.Duration) {
	if nm == nil {
		return nil
	}
	return nm.m.ObserveApply
}

// serverCommands is the server's Config.Metrics (nil without metrics).
func (nm *nodeMetrics) serverCommands() *metrics.Commands {
	if nm == nil {
		return nil
	}
	return nm.commands
}

// serve starts answering scrapes and probes: the node is assembled.
func (nm *nodeMetrics) serve(n *Node) {
	if nm != nil {
		nm.srv = nm.m.Serve(nm.ln, n.log)
	}
}

// close stops the HTTP server, or the bare listener of a start that failed
// before serve.
func (nm *nodeMetrics) close() error {
	switch {
	case nm == nil:
		return nil
	case nm.srv != nil:
		return nm.srv.Close()
	}
	return nm.ln.Close()
}

// MetricsAddr is the bound --metrics-addr, nil without one.
func (n *Node) MetricsAddr() net.Addr {
	if n.metrics == nil {
		return nil
	}
	return n.metrics.ln.Addr()
}
