package group

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/redcell/redcell/internal/lograte"
)

// NewRaftLogger is the hclog.Logger hashicorp/raft (and its transport) log
// through: each call becomes a record of the node's slog logger, so the
// whole process logs through one handler, text or JSON. The record's
// message is raft's message and its attributes are raft's key/value pairs
// (component=raft), so a JSON log carries peer=, error=, term= as fields.
// Two things are changed on the way, so that the log says what an operator
// acts on:
//
//   - the warnings that are the normal course of things (isRoutineWarning:
//     a lone node's first election, a new member's first append) are info;
//     only an election that follows a leader's silence warns;
//   - a warning or error about a peer repeated for the same peer (raft
//     retries a down peer every few hundred milliseconds, each time an
//     error) is logged once per raftRepeatEvery, with how many were
//     suppressed since.
//
// Raft calls it from any of its goroutines; the slog handler and the rate
// limiter are safe for that.
func NewRaftLogger(l *slog.Logger) hclog.Logger {
	return newRaftLogger(l, time.Now)
}

func newRaftLogger(l *slog.Logger, now func() time.Time) hclog.Logger {
	level := new(atomic.Int32)
	level.Store(int32(hclog.Info))
	return &raftLogger{sink: &raftSink{l: l, repeats: lograte.NewWithClock(raftRepeatEvery, now)}, name: "raft", level: level}
}

// raftRepeatEvery is how often one repeated raft warning or error is logged.
const raftRepeatEvery = 30 * time.Second

// raftLogger is one hclog.Logger: a name and implied arguments (With,
// Named) over the sink that all loggers derived from one NewRaftLogger
// share, with its rate limit and level.
type raftLogger struct {
	sink    *raftSink
	name    string
	implied []any
	level   *atomic.Int32 // an hclog.Level; SetLevel moves every derived logger
}

type raftSink struct {
	l       *slog.Logger
	repeats *lograte.Limiter // by message and peer
}

func (r *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	if level < hclog.Level(r.level.Load()) || level == hclog.Off {
		return
	}
	r.sink.emit(r.name, level, msg, append(append([]any(nil), r.implied...), args...))
}

func (r *raftLogger) Trace(msg string, args ...any) { r.Log(hclog.Trace, msg, args...) }
func (r *raftLogger) Debug(msg string, args ...any) { r.Log(hclog.Debug, msg, args...) }
func (r *raftLogger) Info(msg string, args ...any)  { r.Log(hclog.Info, msg, args...) }
func (r *raftLogger) Warn(msg string, args ...any)  { r.Log(hclog.Warn, msg, args...) }
func (r *raftLogger) Error(msg string, args ...any) { r.Log(hclog.Error, msg, args...) }

func (r *raftLogger) IsTrace() bool { return r.enabled(hclog.Trace) }
func (r *raftLogger) IsDebug() bool { return r.enabled(hclog.Debug) }
func (r *raftLogger) IsInfo() bool  { return r.enabled(hclog.Info) }
func (r *raftLogger) IsWarn() bool  { return r.enabled(hclog.Warn) }
func (r *raftLogger) IsError() bool { return r.enabled(hclog.Error) }

func (r *raftLogger) enabled(l hclog.Level) bool { return l >= hclog.Level(r.level.Load()) }

func (r *raftLogger) ImpliedArgs() []any { return r.implied }

func (r *raftLogger) With(args ...any) hclog.Logger {
	c := *r
	c.implied = append(append([]any(nil), r.implied...), args...)
	return &c
}

func (r *raftLogger) Name() string { return r.name }

func (r *raftLogger) Named(name string) hclog.Logger {
	c := *r
	c.name = r.name + "." + name
	return &c
}

func (r *raftLogger) ResetNamed(name string) hclog.Logger {
	c := *r
	c.name = name
	return &c
}

func (r *raftLogger) SetLevel(level hclog.Level) { r.level.Store(int32(level)) }
func (r *raftLogger) GetLevel() hclog.Level      { return hclog.Level(r.level.Load()) }

func (r *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(r.StandardWriter(opts), "", 0)
}

// StandardWriter logs each line written to it as one record, at
// opts.ForceLevel or info.
func (r *raftLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return lineWriter(func(line string) { r.Log(level, line) })
}

type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w(string(bytes.TrimSpace(line)))
	}
	return len(p), nil
}

// emit turns one raft call into a slog record.
func (s *raftSink) emit(component string, level hclog.Level, msg string, args []any) {
	sl := slogLevel(level)
	if sl == slog.LevelWarn && isRoutineWarning(msg, args) {
		sl = slog.LevelInfo
	}
	attrs := make([]slog.Attr, 0, len(args)/2+2)
	attrs = append(attrs, slog.String("component", component))
	peer := ""
	for i := 0; i+1 < len(args); i += 2 {
		key := fmt.Sprint(args[i])
		if key == "peer" || key == "target" { // target: requestVote's name for the peer
			peer = fmt.Sprint(args[i+1])
		}
		attrs = append(attrs, raftAttr(key, args[i+1]))
	}
	if len(args)%2 == 1 { // hclog's convention for an odd argument
		attrs = append(attrs, raftAttr("EXTRA_VALUE_AT_END", args[len(args)-1]))
	}
	if sl >= slog.LevelWarn && peer != "" {
		suppressed, ok := s.repeats.Allow(msg + "|" + peer)
		if !ok {
			return
		}
		if suppressed > 0 {
			attrs = append(attrs, slog.Int("suppressed_since_last", suppressed))
		}
	}
	s.l.LogAttrs(context.Background(), sl, msg, attrs...)
}

func slogLevel(l hclog.Level) slog.Level {
	switch {
	case l >= hclog.Error:
		return slog.LevelError
	case l == hclog.Warn:
		return slog.LevelWarn
	case l == hclog.Info:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// raftAttr is one of raft's key/value pairs as an attribute: numbers,
// booleans and durations as they are, errors as their text, anything else
// (a raft.Server, a ServerAddress, hclog.Fmt) as hclog's text output would
// print it, so that a JSON log shows {Voter n2 127.0.0.1:7002}, not a
// struct with a numeric suffrage.
func raftAttr(key string, v any) slog.Attr {
	switch v := v.(type) {
	case string:
		return slog.String(key, v)
	case int:
		return slog.Int(key, v)
	case int64:
		return slog.Int64(key, v)
	case uint64:
		return slog.Uint64(key, v)
	case int32, uint32, uint, float64, bool:
		return slog.Any(key, v)
	case time.Duration:
		return slog.Duration(key, v)
	case error:
		return slog.String(key, v.Error())
	case hclog.Format:
		if len(v) > 0 {
			if f, ok := v[0].(string); ok {
				return slog.String(key, fmt.Sprintf(f, v[1:]...))
			}
		}
	}
	return slog.String(key, fmt.Sprint(v))
}

// isRoutineWarning reports whether a raft warning is the normal course of
// things, which the log says at info:
//   - the election a node starts when it has never heard of a leader (a
//     lone node's every start, a new cluster's first election): a start,
//     not a loss;
//   - a new member's empty log meeting the leader's first append: the
//     follower's "failed to get previous log" with last-index=0, and the
//     leader's "appendEntries rejected, sending older logs", with which it
//     walks back to what the follower has (every join, every follower
//     that restarts behind).
func isRoutineWarning(msg string, args []any) bool {
	switch msg {
	case "heartbeat timeout reached, starting election":
		return argText(args, "last-leader-addr") == ""
	case "failed to get previous log":
		return argText(args, "last-index") == "0"
	case "appendEntries rejected, sending older logs":
		return true
	}
	return false
}

// argText is the value of key among raft's arguments as text ("" when
// absent or empty).
func argText(args []any, key string) string {
	for i := 0; i+1 < len(args); i += 2 {
		if fmt.Sprint(args[i]) == key {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}
