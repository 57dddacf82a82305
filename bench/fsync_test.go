package main

import (
	"os"
	"strings"
	"testing"
)

// The probe measures real syncs in the given directory and leaves nothing
// behind.
func TestMeasureFsync(t *testing.T) {
	dir := t.TempDir()
	fs, err := measureFsync(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fs.P50 <= 0 || fs.P99 < fs.P50 {
		t.Fatalf("p50 %v, p99 %v", fs.P50, fs.P99)
	}
	if fs.OverwriteP50 <= 0 || fs.OverwriteP99 < fs.OverwriteP50 {
		t.Fatalf("overwrite p50 %v, p99 %v", fs.OverwriteP50, fs.OverwriteP99)
	}
	if s := fs.String(); !strings.Contains(s, "append + fsync") || !strings.Contains(s, "overwriting written blocks") {
		t.Errorf("String: %q", fs.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe left %d files behind", len(entries))
	}
	if (fsyncSpeed{}).String() != "unknown" {
		t.Error("an unmeasured speed must read unknown")
	}
}
