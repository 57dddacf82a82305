// Command redcell runs a Redcell node: a Redis-protocol rate-limit server
// whose decisions are committed through a Raft log on Pebble before they are
// answered. With an empty data directory it bootstraps a one-node cluster.
//
// default.pgo beside this file is the CPU profile Go's compiler optimises
// the server with (profile-guided optimisation; `go build` and `go run` use
// it on their own). `go run ./bench -mode pgo` takes it afresh from a node
// and a cluster under the bench's loads; bench/DESIGN.md has the figures.
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
	"runtime"
	"syscall"
	"time"

	"github.com/redcell/redcell/node"
)

// setProcs chooses GOMAXPROCS. A decision is a chain of goroutine handoffs
// (connection -> raft's leader loop -> Pebble's WAL syncer -> state machine
// -> completer -> connection) with little CPU in each; with one P a handoff
// is a switch on the same thread, with several it wakes another OS thread.
// The clients, the kernel's TCP stack and the disk need cores too. Measured
// on the 2-core machine, alternating GOMAXPROCS 2 and 1 under
// redis-benchmark -r 100000: single-client p50 0.30-0.33 -> 0.22-0.23 ms,
// -c 50 -P 1 52-54k -> 56-59k, -c 50 -P 16 461-499k -> 491-513k,
// -c 1 -P 16 51-52k -> 80-82k, -c 200 -P 1 79k -> 97k; only the CPU-bound
// -c 200 -P 64 lost (1.29-1.31M -> 1.16-1.25M). Half the CPUs keeps that
// trade on larger machines, where it has not been measured.
func setProcs(flagProcs int) {
	switch {
	case flagProcs > 0:
		runtime.GOMAXPROCS(flagProcs)
	case os.Getenv("GOMAXPROCS") == "":
		runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)/2))
	}
}

// fatalCloseBound is how long a node stopping after a fatal error waits
// for its parts to close.
const fatalCloseBound = 5 * time.Second

func main() {
	if os.Getenv("GOGC") == "" {
		startGCTuner()
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	var fileErr configFileError
	if errors.As(err, &fileErr) {
		// A config file redcell cannot use exits 1 with Redis's report.
		fmt.Fprintln(os.Stderr, fileErr)
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "redcell:", err)
		os.Exit(2)
	}
	if cfg.showVersion {
		fmt.Println(versionLine())
		os.Exit(0)
	}
	setProcs(cfg.procs)
	level, err := cfg.slogLevel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redcell: --log-level:", err)
		os.Exit(2)
	}
	levelVar := new(slog.LevelVar) // CONFIG SET loglevel moves it
	levelVar.Set(level)
	log := newLogger(os.Stderr, cfg.logFormat, levelVar) // logger.go

	if cfg.pprofAddr != "" {
		go func() { log.Warn("pprof server stopped", "err", http.ListenAndServe(cfg.pprofAddr, nil)) }()
	}
	// config → data dir → stores → listener → raft → server → wait for a signal.
	n, err := startNode(cfg, log, levelVar)
	if err != nil {
		log.Error("cannot start", "err", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	// SIGHUP rotates certificates without a restart (later handshakes use
	// the files as they are now; a failed reload keeps the old material);
	// without TLS it is ignored, as Redis ignores it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	// A stop hands a leader's leadership over first (node.Shutdown), so
	// that a rolling restart costs clients no error; SHUTDOWN NOW does not.
	handOver := true
wait:
	for {
		select {
		case <-hup:
			switch err := n.ReloadTLS(); {
			case errors.Is(err, node.ErrNoTLS):
				log.Info("SIGHUP ignored: no TLS configured")
			case err != nil:
				log.Error("SIGHUP: TLS material not reloaded", "err", err)
			default:
				log.Info("SIGHUP: TLS certificates reloaded")
			}
		case s := <-sig:
			log.Info("shutting down", "signal", s.String())
			break wait
		case req := <-n.ShutdownRequested():
			log.Info("shutting down", "reason", "SHUTDOWN command", "hand_over", req.HandOver)
			handOver = req.HandOver
			break wait
		case err := <-n.Fatal():
			log.Error("stopping after a fatal error", "err", err)
			// A dead storage engine holds the goroutine that hit it for good,
			// and raft's shutdown waits for it: close what closes within a
			// bound, then exit regardless. Clients see their connections end,
			// never a hang.
			closed := make(chan struct{})
			go func() { _ = n.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(fatalCloseBound):
				log.Error("shutdown did not finish after the fatal error; exiting", "waited", fatalCloseBound)
			}
			os.Exit(1)
		}
	}
	if err := n.Shutdown(handOver); err != nil {
		log.Error("shutdown", "err", err)
		os.Exit(1)
	}
	log.Info("stopped cleanly")
}
