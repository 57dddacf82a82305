package main

import (
	"errors"
	"github.com/redcell/redcell/internal/arg"
	"log/slog"
	"time"

	"github.com/redcell/redcell/internal/tlscert"
	"github.com/redcell/redcell/node"
)

// startNode turns the flags into a node configuration and starts it.
func startNode(cfg config, log *slog.Logger, level *slog.LevelVar) (*node.Node, error) {
	secret, err := cfg.secret()
	if err != nil {
		return nil, err
	}
	pass, err := cfg.password()
	if err != nil {
		return nil, err
	}
	tlsStore, err := cfg.tls()
	if err != nil {
		return nil, err
	}
	auth, _ := tlscert.ParseClientAuth(cfg.tlsAuthClients) // checked by parseFlags
	if cfg.join != "" && secret == nil {
		return nil, errors.New("--join needs the cluster secret (--cluster-secret-file): peers admit only nodes that prove it")
	}
	var rewrite func(map[string]string) error // CONFIG REWRITE, with --config
	if cfg.configFile != "" {
		rewrite = newConfigRewriter(cfg, pass, level).rewrite
	}
	return node.Open(node.Config{
		Bind:                  cfg.bind,
		Port:                  cfg.port,
		Advertise:             cfg.advertise,
		DataDir:               cfg.dataDir,
		NodeID:                cfg.nodeID,
		ClusterSecret:         secret,
		Join:                  cfg.join,
		Bootstrap:             cfg.bootstrap,
		Groups:                cfg.groups,
		JoinTimeout:           cfg.joinTimeout,
		WriteTimeout:          cfg.writeTimeout,
		HeartbeatTimeout:      cfg.heartbeatTimeout,
		ElectionTimeout:       cfg.electionTimeout,
		LeaderLeaseTimeout:    cfg.leaseTimeout,
		EnableDebug:           cfg.enableDebug,
		RequirePass:           pass,
		LogLevel:              level,
		MaxClients:            cfg.maxClients,
		MaxMemory:             mustMemory(cfg.maxMemory),
		ProtoMaxBulkLen:       mustMemory(cfg.protoMaxBulkLen),
		QueryBufferLimit:      mustMemory(cfg.queryBufferLimit),
		OutputBufferLimit:     cfg.outputBufferLimit,
		RewriteConfig:         rewrite,
		IdleTimeout:           cfg.idleTimeout,
		Stripes:               cfg.stripes,
		MaxInflight:           cfg.maxInflight,
		MaxInflightWithPeers:  cfg.maxInflightPeers,
		DirectWALSync:         cfg.directSync,
		AfterWALSync:          afterWALSync,
		ScriptMaxInstructions: cfg.scriptMaxInstr,
		ScriptMaxMemory:       mustMemory(cfg.scriptMaxMemory),
		BusyPoll:              time.Duration(cfg.busyPollUsec) * time.Microsecond,
		MaxAppend:             cfg.maxAppend,
		SnapThresh:            cfg.snapThresh,
		SnapEvery:             cfg.snapEvery,
		SnapshotLogBytes:      cfg.snapBytes,
		MinFreeDisk:           minFreeDiskFlag(cfg.minFreeDisk),
		TLS:                   tlsStore,
		TLSPort:               cfg.tlsPort,
		TLSAuthClients:        auth,
		TLSCluster:            cfg.tlsCluster == "yes",
		ProtectedMode:         cfg.protectedMode == "yes",
		ServerParams:          cfg.diagnosticParams(),
		Version:               buildVersion(),
		MetricsAddr:           cfg.metricsAddr,
		Logger:                log,
	})
}

// afterWALSync is node.Config.AfterWALSync: nil, except in a binary built
// with -tags redcell_slowdisk, where slowdisk.go sets it to stretch every
// WAL sync for the bench's slow-disk mode.
var afterWALSync func(direct bool)

// minFreeDiskFlag maps --min-free-disk (0 = off) to node.Config's
// convention (negative = off).
func minFreeDiskFlag(v int64) int64 {
	if v == 0 {
		return -1
	}
	return v
}

// mustMemory is --maxmemory in bytes; parseFlags has validated it.
func mustMemory(s string) int64 { n, _ := arg.Memory(s); return n }
