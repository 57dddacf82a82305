package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The restart mode runs when named, not in "all"; -quick shrinks it; its
// flags are checked.
func TestRestartFlags(t *testing.T) {
	o, err := parseFlags([]string{"-mode", "restart", "-keys", "5000", "-restarts", "3", "-restart-down", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.modes, []string{"restart"}) || o.restart != (restartOptions{rounds: 3, largeKeys: 5000, downFor: 2 * time.Second}) {
		t.Errorf("parsed %+v", o.restart)
	}
	if o, _ := parseFlags([]string{"-mode", "restart", "-quick"}, io.Discard); o.restart != (restartOptions{rounds: 2, largeKeys: 100000, downFor: time.Second}) {
		t.Errorf("-quick: %+v", o.restart)
	}
	if o, _ := parseFlags([]string{"-mode", "all"}, io.Discard); slices.Contains(o.modes, "restart") {
		t.Error("-mode all includes restart")
	}
	for _, bad := range [][]string{{"-restarts", "0"}, {"-restart-down", "-1s"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// The node's own account of its start is read from its log lines as
// group/loading.go writes them.
func TestLoadingFromLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restart-1.log")
	log := strings.Join([]string{
		`time=2026-11-27T11:18:52.686Z level=INFO msg="redcell started" addr=127.0.0.1:1`,
		`time=2026-11-27T11:18:53.900Z level=INFO msg="restored from snapshot" id=2-10-1 index=10 bytes=38500000 took=1.429s`,
		`time=2026-11-27T11:18:54.812Z level=INFO msg=loaded how="replayed the log up to the commit index" took=2.2s log_last_index_at_start=104 applied_index=104`,
	}, "\n")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	restore, load, how := loadingFromLog(path)
	if restore != 1429*time.Millisecond || load != 2200*time.Millisecond || how != "replayed the log up to the commit index" {
		t.Errorf("read restore %v, load %v, how %q", restore, load, how)
	}
}
