package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/redcell/redcell/nodeinfo"
)

// Readiness is /readyz's rule: a node is ready when it is not loading, it
// knows a leader (itself included; a leader must also have applied
// everything earlier terms committed, raft_ready), and its applied index is
// within maxLag of the commit index it knows (a follower learns the
// leader's commit index with every append) — in every group it runs.
// Otherwise it answers why, in one line.
func Readiness(loading bool, r nodeinfo.Raft, maxLag uint64) (bool, string) {
	if ok, why := readiness(loading, r, maxLag); !ok {
		return false, why
	}
	for _, g := range r.Groups {
		gr := nodeinfo.Raft{State: g.State, Ready: g.Ready, LeaderID: g.LeaderID, CommitIndex: g.CommitIndex, AppliedIndex: g.AppliedIndex}
		if ok, why := readiness(false, gr, maxLag); !ok {
			return false, fmt.Sprintf("group %d: %s", g.ID, why)
		}
	}
	return true, "ok"
}

// readiness is Readiness of one group.
func readiness(loading bool, r nodeinfo.Raft, maxLag uint64) (bool, string) {
	switch {
	case loading:
		return false, "loading"
	case r.State == "shutdown":
		return false, "shutting down"
	case r.LeaderID == "":
		return false, "no leader known"
	case r.State == "leader" && !r.Ready:
		return false, "leader not ready: applying what earlier terms committed"
	case r.CommitIndex > r.AppliedIndex+maxLag:
		return false, fmt.Sprintf("catching up: applied %d of %d", r.AppliedIndex, r.CommitIndex)
	}
	return true, "ok"
}

// Ready is Readiness for this node now.
func (m *Metrics) Ready() (bool, string) {
	return Readiness(m.cfg.Status.Loading(), m.cfg.Status.Raft(), m.cfg.ReadyLag)
}

// Handler serves /metrics, /healthz and /readyz.
//
//	/metrics  the registry in Prometheus's text (or negotiated) format
//	/healthz  200 "ok": the process is alive and its HTTP server answers
//	/readyz   200 "ok", or 503 with the reason (Readiness)
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		plain(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := m.Ready(); !ok {
			plain(w, http.StatusServiceUnavailable, why)
			return
		}
		plain(w, http.StatusOK, "ok")
	})
	return mux
}

func plain(w http.ResponseWriter, code int, line string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintln(w, line)
}

// Server is the HTTP server on --metrics-addr.
type Server struct {
	ln  net.Listener
	srv *http.Server
	log *slog.Logger
}

// Serve serves m's Handler on ln (the caller listens first, so that a
// taken --metrics-addr fails a node's start before it writes anything) in
// a goroutine of its own until Close. Status must answer from now on.
func (m *Metrics) Serve(ln net.Listener, log *slog.Logger) *Server {
	s := &Server{ln: ln, log: log, srv: &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving metrics", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server: scrapes in progress get up to a second.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}
