package main

import (
	"io"
	"strings"
	"testing"
)

// Every bad number is refused with a message naming the flag; the defaults
// parse.
func TestFlagsAreValidatedLoudly(t *testing.T) {
	if _, err := parseFlags(nil, io.Discard); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, args := range [][]string{
		{"--stripes", "0"}, {"--stripes", "-3"}, {"--procs", "-1"}, {"--port", "0"}, {"--port", "70000"},
		{"--max-inflight", "0"}, {"--max-append-entries", "0"}, {"--snapshot-threshold", "0"},
		{"--snapshot-interval", "0s"}, {"--data-dir", ""}, {"--write-timeout", "0s"},
		{"--raft-lease-timeout", "1s"}, {"--raft-heartbeat-timeout", "1ms"},
		{"--cluster-secret", "x", "--cluster-secret-file", "y"}, {"extra"},
	} {
		_, err := parseFlags(args, io.Discard)
		if err == nil {
			t.Errorf("%v: accepted", args)
			continue
		}
		if name := strings.TrimPrefix(args[0], "--"); args[0] != "extra" && !strings.Contains(err.Error(), name) && !strings.Contains(err.Error(), "timeout") {
			t.Errorf("%v: %q does not name the flag", args, err)
		}
	}
	if _, err := (config{clusterSecret: "short"}).secret(); err == nil {
		t.Error("a 5-byte cluster secret was accepted")
	}
}
