package group

import (
	"context"
	"log/slog"
	"sync"
	"testing"
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

// Test_RaftLogger_MapsLevels: raft's hclog lines arrive in slog at the
// matching level, tagged component=raft, with the level tag stripped; lines
// below hclog's Info level are dropped.
func Test_RaftLogger_MapsLevels(t *testing.T) {
	h := &recordHandler{}
	l := NewRaftLogger(slog.New(h))
	l.Error("disk full", "index", 7)
	l.Warn("heartbeat slow")
	l.Info("entering leader state")
	l.Debug("not shown")

	want := []struct {
		level  slog.Level
		prefix string
	}{
		{slog.LevelError, "raft: disk full: index=7"},
		{slog.LevelWarn, "raft: heartbeat slow"},
		{slog.LevelInfo, "raft: entering leader state"},
	}
	if len(h.records) != len(want) {
		t.Fatalf("%d records, want %d: %v", len(h.records), len(want), h.records)
	}
	for i, w := range want {
		r := h.records[i]
		if r.Level != w.level || r.Message != w.prefix {
			t.Errorf("record %d: level %v message %q, want %v %q", i, r.Level, r.Message, w.level, w.prefix)
		}
		component := ""
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "component" {
				component = a.Value.String()
			}
			return true
		})
		if component != "raft" {
			t.Errorf("record %d: component %q, want raft", i, component)
		}
	}
}
