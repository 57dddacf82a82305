package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/group"
)

// Every bad number is refused with a message naming the flag; the defaults
// parse.
func TestFlagsAreValidatedLoudly(t *testing.T) {
	if _, err := parseFlags(nil, io.Discard); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, args := range [][]string{
		{"--stripes", "0"}, {"--stripes", "-3"}, {"--procs", "-1"}, {"--port", "0"}, {"--port", "70000"},
		{"--max-inflight", "0"}, {"--max-inflight-with-peers", "0"}, {"--busy-poll-usec", "-1"}, {"--busy-poll-usec", "1000001"}, {"--max-append-entries", "0"}, {"--snapshot-threshold", "0"},
		{"--snapshot-interval", "0s"}, {"--data-dir", ""}, {"--write-timeout", "0s"}, {"--join-timeout", "0s"}, {"--join-timeout", "-1s"},
		{"--raft-lease-timeout", "1s"}, {"--raft-heartbeat-timeout", "1ms"}, {"--raft-election-timeout", "50ms"},
		{"--raft-heartbeat-timeout", "1s", "--raft-election-timeout", "500ms"},
		{"--cluster-secret", "x", "--cluster-secret-file", "y"}, {"--requirepass", "x", "--requirepass-file", "y"},
		{"--maxclients", "0"}, {"--timeout", "-1"}, {"extra"},
		{"--tls-port", "-1"}, {"--tls-port", "6379"}, {"--tls-port", "6380"}, {"--tls-cluster", "yes"},
		{"--tls-auth-clients", "maybe"}, {"--tls-cluster", "on"}, {"--protected-mode", "off"}, {"--log-format", "xml"},
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

// The Raft timeouts: a heartbeat timeout given alone carries the election
// and lease timeouts with it (a WAN needs one flag, not three); each given
// explicitly is kept.
func TestRaftTimeoutsFollowTheHeartbeat(t *testing.T) {
	for _, tt := range []struct {
		args                    []string
		heartbeat, elect, lease time.Duration
	}{
		{nil, group.DefaultHeartbeatTimeout, group.DefaultElectionTimeout, group.DefaultLeaderLeaseTimeout},
		{[]string{"--raft-heartbeat-timeout", "1s"}, time.Second, time.Second, time.Second},
		{[]string{"--raft-heartbeat-timeout", "1s", "--raft-election-timeout", "2s", "--raft-lease-timeout", "500ms"}, time.Second, 2 * time.Second, 500 * time.Millisecond},
		{[]string{"--raft-election-timeout", "3s"}, group.DefaultHeartbeatTimeout, 3 * time.Second, group.DefaultLeaderLeaseTimeout},
	} {
		c, err := parseFlags(tt.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if c.heartbeatTimeout != tt.heartbeat || c.electionTimeout != tt.elect || c.leaseTimeout != tt.lease {
			t.Errorf("%v: heartbeat %v, election %v, lease %v; want %v, %v, %v", tt.args,
				c.heartbeatTimeout, c.electionTimeout, c.leaseTimeout, tt.heartbeat, tt.elect, tt.lease)
		}
	}
}

// The client password comes from the flag, the file (one trailing newline
// dropped) or REDCELL_REQUIREPASS, in that order; an empty file is refused
// rather than read as "no password".
func TestRequirePassSources(t *testing.T) {
	t.Setenv("REDCELL_REQUIREPASS", "from-env")
	dir := t.TempDir()
	file := filepath.Join(dir, "pass")
	if err := os.WriteFile(file, []byte("from-file\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		c    config
		want string
	}{
		{config{requirePass: "from-flag"}, "from-flag"},
		{config{requirePassFile: file}, "from-file"},
		{config{}, "from-env"},
	} {
		if got, err := tt.c.password(); err != nil || got != tt.want {
			t.Errorf("%+v: %q, %v; want %q", tt.c, got, err, tt.want)
		}
	}
	for _, c := range []config{{requirePassFile: empty}, {requirePassFile: filepath.Join(dir, "missing")}} {
		if _, err := c.password(); err == nil || !strings.Contains(err.Error(), "--requirepass-file") {
			t.Errorf("%+v: %v", c, err)
		}
	}
	t.Setenv("REDCELL_REQUIREPASS", "")
	if got, err := (config{}).password(); err != nil || got != "" {
		t.Errorf("no password anywhere: %q, %v", got, err)
	}
}
