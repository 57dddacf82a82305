package node

import (
	"log/slog"
	"net"
)

// warnIfExposed logs one warning at start when the node listens beyond the
// loopback interface with neither a client password nor a cluster secret:
// such a node was most likely meant to be reached from other hosts (as a
// cluster member or a shared server), and nothing it was given protects it
// there. What is exposed depends on protected mode, which the warning
// states rather than changes: with it (the default) other hosts' clients
// are answered -DENIED and no peer is admitted, so the node serves only
// this host until someone turns protected mode off; without it, every
// client that reaches the port is served.
func warnIfExposed(cfg Config, addr net.Addr, log *slog.Logger) {
	if isLoopbackBind(cfg.Bind) || cfg.RequirePass != "" || len(cfg.ClusterSecret) > 0 {
		return
	}
	exposed := "every client that reaches this port is served without a password (--protected-mode no): anyone on the network can read, reset and flush every limiter"
	if cfg.ProtectedMode {
		exposed = "protected mode answers clients from other hosts -DENIED and no peer is admitted, so only this host is served; " +
			"CONFIG SET protected-mode no from this host would serve every client that reaches the port, without a password"
	}
	log.Warn("listening beyond loopback with neither a client password nor a cluster secret",
		"bind", cfg.Bind, "addr", addr.String(), "exposed", exposed,
		"fix", "--requirepass-file (clients must AUTH), --cluster-secret-file (peers must prove it; needed for a cluster), or --bind 127.0.0.1 to serve this host only")
}

// isLoopbackBind reports whether bind (--bind) only reaches this host.
func isLoopbackBind(bind string) bool {
	if bind == "localhost" {
		return true
	}
	ip := net.ParseIP(bind)
	return ip != nil && ip.IsLoopback()
}
