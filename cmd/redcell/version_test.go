package main

import (
	"io"
	"runtime/debug"
	"strings"
	"testing"
)

// TestDevVersion: an unreleased build is named by its commit, marked
// dirty when the checkout had changes, and "dev" without a stamp.
func TestDevVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}
	for _, c := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, "dev"},
		{rev, "dev-0123456789ab"},
		{append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "dev-0123456789ab-dirty"},
		{append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}), "dev-0123456789ab"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "dev-abc"},
	} {
		if got := devVersion(c.settings); got != c.want {
			t.Errorf("devVersion(%v) = %q, want %q", c.settings, got, c.want)
		}
	}
}

// TestVersionFlag: --version parses alone, and the line names the build
// and the Go release; a release build says its version.
func TestVersionFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"--version"}, io.Discard)
	if err != nil || !cfg.showVersion {
		t.Fatalf("--version: %v, showVersion %v", err, cfg.showVersion)
	}
	if line := versionLine(); !strings.HasPrefix(line, "redcell dev") || !strings.Contains(line, "go1.") {
		t.Errorf("versionLine() = %q", line)
	}
	defer func(v string) { version = v }(version)
	version = "v1.2.3"
	if got := buildVersion(); got != "v1.2.3" {
		t.Errorf("buildVersion() with version set = %q", got)
	}
}
