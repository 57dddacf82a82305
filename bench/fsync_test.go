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
	if !strings.Contains(fs.String(), "p50") {
		t.Errorf("String: %q", fs.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe left %d files behind", len(entries))
	}
	if (fsyncSpeed{}).String() != "unknown" {
		t.Error("an unmeasured speed must read unknown")
	}
}
