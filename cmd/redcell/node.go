package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/raftstore"
	"github.com/redcell/redcell/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// node is a running Redcell node and the order in which it stops.
type node struct {
	log       *slog.Logger
	store     *raftstore.Store
	mux       *server.Mux
	transport *raft.NetworkTransport
	group     *group.Group
	srv       *server.Server
	fatal     chan error
}

func startNode(cfg config, log *slog.Logger) (*node, error) {
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	nodeID, err := loadNodeID(cfg.dataDir, cfg.nodeID)
	if err != nil {
		return nil, err
	}
	n := &node{log: log, fatal: make(chan error, 1)}
	n.store, err = raftstore.Open(filepath.Join(cfg.dataDir, "raft"), raftstore.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("opening the raft store: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.bind, strconv.Itoa(cfg.port)))
	if err != nil {
		n.store.Close()
		return nil, fmt.Errorf("listening: %w", err)
	}
	advertise, err := advertiseAddr(cfg, ln.Addr())
	if err != nil {
		ln.Close()
		n.store.Close()
		return nil, err
	}
	n.mux = server.NewMux(ln, log)
	n.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  n.mux.RaftLayer(advertise),
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  group.NewRaftLogger(log),
	})
	clock := &group.Clock{}
	machine := fsm.New(fsm.Config{Stripes: cfg.stripes, Logger: log, OnFatal: func(err error) {
		select {
		case n.fatal <- err:
		default:
		}
	}})
	n.group, err = group.Open(group.Config{
		NodeID:      nodeID,
		Addr:        raft.ServerAddress(advertise.String()),
		LogStore:    n.store,
		Stable:      n.store,
		Snapshots:   n.store.SnapshotStore(2),
		Transport:   n.transport,
		FSM:         machine,
		Clock:       clock,
		Logger:      log,
		MaxInflight: cfg.maxInflight,
		Tune: func(rc *raft.Config) {
			if cfg.maxAppend > 0 {
				rc.MaxAppendEntries = cfg.maxAppend
			}
			if cfg.snapThresh > 0 {
				rc.SnapshotThreshold = cfg.snapThresh
			}
			if cfg.snapEvery > 0 {
				rc.SnapshotInterval = cfg.snapEvery
			}
		},
	})
	if err != nil {
		n.transport.Close()
		n.mux.Close()
		n.store.Close()
		return nil, err
	}
	n.srv = server.New(server.Config{
		Group: n.group, FSM: machine, Clock: clock, Store: n.store,
		NodeID: nodeID, Addr: ln.Addr().String(), DataDir: cfg.dataDir,
		EnableDebug: cfg.enableDebug, RedcellVer: version, Logger: log,
	})
	go n.mux.Run()
	go func() {
		if err := n.srv.Serve(n.mux.Clients()); err != nil {
			log.Error("serving clients", "err", err)
		}
	}()
	log.Info("redcell started", "addr", ln.Addr().String(), "node_id", nodeID, "data_dir", cfg.dataDir, "version", version)
	return n, nil
}

// stop shuts down in dependency order: clients (each waits for its answer),
// raft, the transport and listener, then the store, so nothing is torn.
func (n *node) stop() error {
	n.srv.Close()
	err := n.group.Shutdown()
	n.transport.Close()
	n.mux.Close()
	return errors.Join(err, n.store.Close())
}

// loadNodeID returns the configured ID, or the one kept in the data dir, or a
// new one that is then kept there.
func loadNodeID(dir, flagID string) (string, error) {
	path := filepath.Join(dir, "node-id")
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		stored := strings.TrimSpace(string(data))
		if flagID != "" && flagID != stored {
			return "", fmt.Errorf("--node-id %q differs from %q kept in %s", flagID, stored, path)
		}
		return stored, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("reading node id: %w", err)
	}
	id := flagID
	if id == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		id = hex.EncodeToString(b[:])
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing node id: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("writing node id: %w", err)
	}
	return id, nil
}

func advertiseAddr(cfg config, bound net.Addr) (net.Addr, error) {
	s := cfg.advertise
	if s == "" {
		host, port, _ := net.SplitHostPort(bound.String())
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		s = net.JoinHostPort(host, port)
	}
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		return nil, fmt.Errorf("--advertise %q: %w", s, err)
	}
	return a, nil
}
