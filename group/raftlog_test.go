package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// recordHandler keeps every record it is given.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

// attrsOf is a record's attributes as text.
func attrsOf(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

// Test_RaftLogger_MapsLevels: raft's calls arrive in slog at the matching
// level, with raft's message as the message and its key/value pairs as
// attributes, tagged component=raft; calls below info are dropped.
func Test_RaftLogger_MapsLevels(t *testing.T) {
	h := &recordHandler{}
	l := NewRaftLogger(slog.New(h))
	l.Error("disk full", "index", 7)
	l.Warn("heartbeat slow", "peer", raft.Server{Suffrage: raft.Voter, ID: "n2", Address: "127.0.0.1:7002"}, "err", errors.New("refused"), "took", 150*time.Millisecond)
	l.Info("entering leader state")
	l.Debug("not shown")
	l.With("id", "snap-1").Named("snapshot").Info("snapshot done", "index", uint64(9))

	want := []struct {
		level slog.Level
		msg   string
		attrs map[string]string
	}{
		{slog.LevelError, "disk full", map[string]string{"component": "raft", "index": "7"}},
		{slog.LevelWarn, "heartbeat slow", map[string]string{"component": "raft", "peer": "{Voter n2 127.0.0.1:7002}", "err": "refused", "took": "150ms"}},
		{slog.LevelInfo, "entering leader state", map[string]string{"component": "raft"}},
		{slog.LevelInfo, "snapshot done", map[string]string{"component": "raft.snapshot", "id": "snap-1", "index": "9"}},
	}
	if len(h.records) != len(want) {
		t.Fatalf("%d records, want %d: %v", len(h.records), len(want), h.records)
	}
	for i, w := range want {
		r := h.records[i]
		if r.Level != w.level || r.Message != w.msg {
			t.Errorf("record %d: level %v message %q, want %v %q", i, r.Level, r.Message, w.level, w.msg)
		}
		if got := attrsOf(r); fmt.Sprint(got) != fmt.Sprint(w.attrs) {
			t.Errorf("record %d: attributes %v, want %v", i, got, w.attrs)
		}
	}
}

// Test_RaftLogger_StartElectionIsInfo: the election a node starts without
// ever having heard of a leader is info; one after a leader's silence
// stays a warning.
func Test_RaftLogger_StartElectionIsInfo(t *testing.T) {
	h := &recordHandler{}
	l := NewRaftLogger(slog.New(h))
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID(""))
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", raft.ServerAddress("127.0.0.1:7001"), "last-leader-id", raft.ServerID("n1"))
	if len(h.records) != 3 || h.records[0].Level != slog.LevelInfo || h.records[1].Level != slog.LevelInfo || h.records[2].Level != slog.LevelWarn {
		t.Fatalf("records: %v", h.records)
	}
}

// Test_RaftLogger_RepeatsAreRateLimited: a warning or error repeated for
// the same peer is logged once per raftRepeatEvery, the next one saying how
// many were dropped; another peer's, another message, lines that name no
// peer and info lines are not held back.
func Test_RaftLogger_RepeatsAreRateLimited(t *testing.T) {
	h := &recordHandler{}
	now := time.Unix(1_700_000_000, 0)
	l := newRaftLogger(slog.New(h), func() time.Time { return now })
	peerA, peerB := "{Voter n2 127.0.0.1:7002}", "{Voter n3 127.0.0.1:7003}"
	for i := range 5 {
		l.Error("failed to appendEntries to", "peer", peerA, "backoff time", strconv.Itoa(10*i)+"ms", "error", "dial tcp: refused")
		l.Info("entering candidate state")
	}
	l.Error("failed to appendEntries to", "peer", peerB, "error", "dial tcp: refused")
	l.Error("failed to heartbeat to", "peer", peerA, "error", "dial tcp: refused")
	l.Error("disk full")
	l.Error("disk full")
	now = now.Add(raftRepeatEvery)
	l.Error("failed to appendEntries to", "peer", peerA, "error", "dial tcp: refused")

	var errs []slog.Record
	infos := 0
	for _, r := range h.records {
		switch r.Level {
		case slog.LevelError:
			errs = append(errs, r)
		case slog.LevelInfo:
			infos++
		}
	}
	if infos != 5 || len(errs) != 6 {
		t.Fatalf("%d infos and %d errors logged, want 5 and 6: %v", infos, len(errs), h.records)
	}
	suppressed := int64(-1)
	errs[5].Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed_since_last" {
			suppressed = a.Value.Int64()
		}
		return true
	})
	if suppressed != 4 {
		t.Errorf("the repeat after the window says %d suppressed, want 4", suppressed)
	}
}

// Test_RaftLogger_JoinWarningsAreInfo: a new member's empty log meeting
// the leader's first append (both sides' warnings) is info; a follower
// that lacks an entry it should have still warns.
func Test_RaftLogger_JoinWarningsAreInfo(t *testing.T) {
	h := &recordHandler{}
	l := NewRaftLogger(slog.New(h))
	l.Warn("failed to get previous log", "previous-index", 5, "last-index", 0, "error", "log not found")
	l.Warn("appendEntries rejected, sending older logs", "peer", "{Nonvoter n3 127.0.0.1:7003}", "next", 1)
	l.Warn("failed to get previous log", "previous-index", 500, "last-index", 40, "error", "log not found")
	want := []slog.Level{slog.LevelInfo, slog.LevelInfo, slog.LevelWarn}
	if len(h.records) != len(want) {
		t.Fatalf("records: %v", h.records)
	}
	for i, w := range want {
		if h.records[i].Level != w {
			t.Errorf("record %d %q: level %v, want %v", i, h.records[i].Message, h.records[i].Level, w)
		}
	}
}

// Test_RaftLogger_VoteErrorsAreRateLimited: requestVote names its peer
// target=, and its repeated errors are limited as the others are.
func Test_RaftLogger_VoteErrorsAreRateLimited(t *testing.T) {
	h := &recordHandler{}
	now := time.Unix(0, 0)
	l := newRaftLogger(slog.New(h), func() time.Time { return now })
	for i := 0; i < 5; i++ {
		l.Error("failed to make requestVote RPC", "target", "{Voter n3 127.0.0.1:7003}", "error", "connection refused", "term", i)
		l.Error("failed to make requestVote RPC", "target", "{Voter n2 127.0.0.1:7002}", "error", "connection refused", "term", i)
	}
	if len(h.records) != 2 {
		t.Fatalf("%d records for 5 failed votes to each of 2 peers, want 2: %v", len(h.records), h.records)
	}
}
