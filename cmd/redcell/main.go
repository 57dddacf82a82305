// Command redcell runs a Redcell node: a Redis-protocol rate-limit server
// whose decisions are committed through a Raft log on Pebble before they are
// answered. With an empty data directory it bootstraps a one-node cluster.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only with --pprof
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "redcell:", err)
		os.Exit(2)
	}
	level, err := cfg.slogLevel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redcell: --log-level:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	if cfg.pprofAddr != "" {
		go func() { log.Warn("pprof server stopped", "err", http.ListenAndServe(cfg.pprofAddr, nil)) }()
	}
	// config → data dir → stores → listener → raft → server → wait for a signal.
	n, err := startNode(cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
	case err := <-n.fatal:
		log.Error("stopping after a fatal error", "err", err)
		n.stop()
		os.Exit(1)
	}
	if err := n.stop(); err != nil {
		log.Error("shutdown", "err", err)
		os.Exit(1)
	}
	log.Info("stopped cleanly")
}
