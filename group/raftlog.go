package group

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// NewRaftLogger routes hashicorp/raft's hclog output into slog, so the whole
// process logs through one handler. hclog formats each record as one line
// "[LEVEL] name: message: k=v ..."; the level is mapped and the rest kept as
// the message. Two things are changed on the way, so that the log says
// what an operator acts on:
//
//   - the warnings that are the normal course of things (isRoutineWarning:
//     a lone node's first election, a new member's first append) are info;
//     only an election that follows a leader's silence warns;
//   - a warning or error about a peer repeated for the same peer (raft
//     retries a down peer every few hundred milliseconds, each time an
//     error) is logged once per raftRepeatEvery, with how many were
//     suppressed since.
func NewRaftLogger(l *slog.Logger) hclog.Logger {
	return newRaftLogger(newSlogLineWriter(l, time.Now))
}

func newRaftLogger(w *slogLineWriter) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:        "raft",
		Level:       hclog.Info,
		Output:      w,
		DisableTime: true,
	})
}

func newSlogLineWriter(l *slog.Logger, now func() time.Time) *slogLineWriter {
	return &slogLineWriter{l: l, last: map[string]repeated{}, now: now}
}

// raftRepeatEvery is how often one repeated raft warning or error is logged.
const raftRepeatEvery = 30 * time.Second

type slogLineWriter struct {
	l    *slog.Logger
	now  func() time.Time
	mu   sync.Mutex
	last map[string]repeated // by message and peer
}

// repeated is a warning or error line's last logging and what was dropped
// since.
type repeated struct {
	at         time.Time
	suppressed int
}

func (w *slogLineWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, lv := range []struct {
		tag   string
		level slog.Level
	}{{"[ERROR]", slog.LevelError}, {"[WARN]", slog.LevelWarn}, {"[INFO]", slog.LevelInfo}, {"[DEBUG]", slog.LevelDebug}, {"[TRACE]", slog.LevelDebug}} {
		if bytes.HasPrefix(line, []byte(lv.tag)) {
			level = lv.level
			line = bytes.TrimSpace(line[len(lv.tag):])
			break
		}
	}
	msg := string(line)
	if level == slog.LevelWarn && isRoutineWarning(msg) {
		level = slog.LevelInfo
	}
	if level >= slog.LevelWarn && (strings.Contains(msg, "peer=") || strings.Contains(msg, "target=")) {
		suppressed, ok := w.admit(repeatKey(msg))
		if !ok {
			return len(p), nil
		}
		if suppressed > 0 {
			w.l.Log(context.Background(), level, msg, "component", "raft", "suppressed_since_last", suppressed)
			return len(p), nil
		}
	}
	w.l.Log(context.Background(), level, msg, "component", "raft")
	return len(p), nil
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
func isRoutineWarning(msg string) bool {
	switch {
	case strings.Contains(msg, "heartbeat timeout reached, starting election"):
		return strings.Contains(msg, "last-leader-addr= ") || strings.Contains(msg, `last-leader-addr=""`)
	case strings.Contains(msg, "failed to get previous log"):
		return strings.Contains(msg+" ", "last-index=0 ")
	case strings.Contains(msg, "appendEntries rejected, sending older logs"):
		return true
	}
	return false
}

// admit reports whether a warning or error with this key is logged now,
// and how many were dropped since the last one that was.
func (w *slogLineWriter) admit(key string) (suppressed int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	r, seen := w.last[key]
	if seen && now.Sub(r.at) < raftRepeatEvery {
		r.suppressed++
		w.last[key] = r
		return 0, false
	}
	if len(w.last) > 1024 {
		clear(w.last) // keys are messages and peers: few, unless raft words change
	}
	w.last[key] = repeated{at: now}
	return r.suppressed, true
}

// repeatKey is what makes two raft lines the same for rate limiting: the
// message before its key=value pairs, and the peer it names, if any (the
// other values, a backoff or an error's text, vary from try to try).
func repeatKey(msg string) string {
	text, kv, _ := strings.Cut(msg, ": ")
	if rest, ok := strings.CutPrefix(text, "raft"); ok && kv != "" && rest == "" {
		text, kv, _ = strings.Cut(kv, ": ")
	}
	peer := ""
	i := strings.Index(kv, "peer=")
	if i < 0 {
		i = strings.Index(kv, "target=") // requestVote's name for the peer
	}
	if i >= 0 {
		peer = kv[i:]
		if j := strings.Index(peer, "}"); j >= 0 {
			peer = peer[:j+1]
		} else if j := strings.IndexByte(peer, ' '); j >= 0 {
			peer = peer[:j]
		}
	}
	return text + "|" + peer
}
