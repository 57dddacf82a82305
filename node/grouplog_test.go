package node

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log sink read while the node writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With several groups each group's raft lines name the group (an
// election, a snapshot, an install happen per group); one group's lines
// are as before groups, without the attribute.
func TestRaftLinesNameTheirGroup(t *testing.T) {
	for _, groups := range []int{1, 2} {
		var buf lockedBuffer
		n := mustOpen(t, t.TempDir(), func(c *Config) {
			c.Groups = groups
			c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		})
		waitCond(t, 10*time.Second, "every group to lead", func() bool {
			for _, lg := range n.groups {
				if !lg.group.Ready() {
					return false
				}
			}
			return true
		})
		mustClose(t, n)
		var leaderLines []string
		for _, line := range strings.Split(buf.String(), "\n") {
			if strings.Contains(line, "entering leader state") {
				leaderLines = append(leaderLines, line)
			}
		}
		if len(leaderLines) != groups {
			t.Fatalf("%d groups: %d lines say a group entered the leader state, want one each:\n%s", groups, len(leaderLines), strings.Join(leaderLines, "\n"))
		}
		for g, line := range leaderLines {
			named := strings.Contains(line, " group=")
			if named != (groups > 1) {
				t.Errorf("%d groups: line %d names its group %v, want %v: %s", groups, g, named, groups > 1, line)
			}
		}
		if groups > 1 && !(strings.Contains(buf.String(), "group=0") && strings.Contains(buf.String(), "group=1")) {
			t.Errorf("%d groups: the log does not name both groups:\n%s", groups, buf.String())
		}
	}
}
