package main

import (
	"io"
	"log/slog"
)

// newLogger is the process's one logger: every package logs through it, and
// so do the adapters that carry hashicorp/raft's hclog lines
// (group.NewRaftLogger) and Pebble's (raftstore's pebbleLogger) into slog,
// so that --log-format json gives one JSON object a line for all of them.
// It also becomes slog's default, which routes the standard library's log
// package (net/http's server errors, the pprof server's) through the same
// handler instead of a plain line of its own.
//
// format is "text" (slog's key=value lines) or "json" (slog's JSON
// handler: "time", "level" and "msg" in every object); parseFlags has
// checked it. level is the LevelVar that CONFIG SET loglevel moves.
func newLogger(w io.Writer, format string, level *slog.LevelVar) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	log := slog.New(h)
	slog.SetDefault(log)
	return log
}
