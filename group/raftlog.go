package group

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// NewRaftLogger routes hashicorp/raft's hclog output into slog, so the whole
// process logs through one handler. hclog formats each record as one line
// "[LEVEL] name: message: k=v ..."; the level is mapped and the rest kept as
// the message.
func NewRaftLogger(l *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:        "raft",
		Level:       hclog.Info,
		Output:      &slogLineWriter{l: l},
		DisableTime: true,
	})
}

type slogLineWriter struct{ l *slog.Logger }

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
	w.l.Log(context.Background(), level, string(line), "component", "raft")
	return len(p), nil
}
