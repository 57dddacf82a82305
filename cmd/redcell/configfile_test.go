package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/conffile"
)

var update = flag.Bool("update", false, "rewrite redcell.conf at the repository's root from the flag definitions")

const exampleConfigPath = "../../redcell.conf"

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A config file sets flags by their names (quoted values, Redis's
// loglevel alias and names, yes/no, includes, one line per output-buffer
// class), and the command line overrides it.
func TestConfigFileUnderFlags(t *testing.T) {
	dir := t.TempDir()
	inc := writeFile(t, filepath.Join(dir, "inc.conf"), "Timeout 30\n")
	path := writeFile(t, filepath.Join(dir, "redcell.conf"), `# a comment
port 7000
data-dir "/tmp/with space\x21"
maxclients 50
loglevel warning
enable-debug-command yes
direct-wal-sync true
protected-mode no
raft-heartbeat-timeout 2s
client-output-buffer-limit normal 1mb 2mb 10
client-output-buffer-limit pubsub 0 0 0
include `+inc+`
`)
	c, err := parseFlags([]string{"--config", path, "--maxclients", "60", "--protected-mode=yes"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := c
	want.port, want.dataDir, want.maxClients, want.logLevel, want.enableDebug, want.directSync = 7000, "/tmp/with space!", 60, "warning", true, true
	want.protectedMode, want.idleTimeout, want.outputBufferLimit = "yes", 30, "normal 1mb 2mb 10 pubsub 0 0 0"
	want.heartbeatTimeout, want.electionTimeout, want.leaseTimeout = 2*time.Second, 2*time.Second, 2*time.Second // they follow the heartbeat
	want.configFile = path
	if c != want {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	if l, _ := c.slogLevel(); l != slog.LevelWarn {
		t.Errorf("loglevel warning: %v", l)
	}
}

// A file redcell cannot use is Redis's fatal report, naming the line; the
// same value on the command line is an ordinary flag error.
func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		text   string
		line   int
		reason string
	}{
		{"# c\nport 7000\nfoo bar\n", 3, "Bad directive or wrong number of arguments"},
		{"maxclients abc\n", 1, "argument couldn't be parsed into an integer"},
		{"\n\nmaxclients 0\n", 3, "--maxclients 0: want 1 to 4294967295"},
		{"maxclients \"abc\n", 1, "Unbalanced quotes in configuration line"},
		{"port\n", 1, "wrong number of arguments"},
		{"port 1 2\n", 1, "wrong number of arguments"},
		{"bootstrap maybe\n", 1, "argument must be 'yes' or 'no'"},
		{"snapshot-interval 5\n", 1, "argument couldn't be parsed into a duration (a number with a unit: 500ms, 2s, 1m)"},
		{"config other.conf\n", 1, "Bad directive or wrong number of arguments"},
		{"version yes\n", 1, "Bad directive or wrong number of arguments"},
		{"log-level loud\n", 1, `--log-level "loud": want debug, info, warn or error (or verbose, notice, warning, nothing)`},
		{"protected-mode maybe\n", 1, `--protected-mode "maybe": want yes or no`},
	} {
		path := writeFile(t, filepath.Join(dir, "bad.conf"), tt.text)
		_, err := parseFlags([]string{"--config", path}, io.Discard)
		var fe configFileError
		var le *conffile.LineError
		if !errors.As(err, &fe) || !errors.As(err, &le) || le.Line != tt.line || le.Reason != tt.reason {
			t.Errorf("%q: %v", tt.text, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "\n*** FATAL CONFIG FILE ERROR (Redcell ") || !strings.Contains(err.Error(), "Reading the configuration file, at line ") {
			t.Errorf("%q: report %q", tt.text, err)
		}
	}
	// The bad value overridden on the command line does not stop the start.
	path := writeFile(t, filepath.Join(dir, "bad.conf"), "maxclients 0\n")
	if _, err := parseFlags([]string{"--config", path, "--maxclients", "5"}, io.Discard); err != nil {
		t.Errorf("overridden bad value: %v", err)
	}
	if _, err := parseFlags([]string{"--config", filepath.Join(dir, "missing.conf")}, io.Discard); !errors.As(err, new(configFileError)) ||
		!strings.Contains(err.Error(), "can't open config file") {
		t.Errorf("missing file: %v", err)
	}
}

// Every flag takes --name value and --name=value (booleans yes/no and
// true/false too), and every flag but --config and --version is a
// directive of the same name.
func TestEveryFlagTakesEveryForm(t *testing.T) {
	fs := defineFlags(&config{}, io.Discard)
	dir := t.TempDir()
	fs.VisitAll(func(f *flag.Flag) {
		values := []string{f.DefValue}
		if isBoolFlag(f) {
			values = []string{"yes", "no", "true", "false", "YES"}
		}
		if f.Name == "config" {
			values = []string{writeFile(t, filepath.Join(dir, "empty.conf"), "")}
		}
		for _, v := range values {
			for _, args := range [][]string{{"--" + f.Name, v}, {"--" + f.Name + "=" + v}, {"-" + f.Name, v}} {
				if _, err := parseFlags(args, io.Discard); err != nil {
					t.Errorf("%q: %v", args, err)
				}
			}
			if notDirectives[f.Name] {
				continue
			}
			path := writeFile(t, filepath.Join(dir, "one.conf"), f.Name+" "+exampleValue(f)+"\n")
			if _, err := parseFlags([]string{"--config", path}, io.Discard); err != nil {
				t.Errorf("directive %s: %v", f.Name, err)
			}
		}
	})
	c, err := parseFlags([]string{"--bootstrap", "yes", "--enable-debug-command", "no", "--direct-wal-sync"}, io.Discard)
	if err != nil || !c.bootstrap || c.enableDebug || !c.directSync {
		t.Errorf("booleans: %+v %v", c, err)
	}
	if _, err := parseFlags([]string{"--bootstrap", "later"}, io.Discard); err == nil {
		t.Error("--bootstrap later: accepted")
	}
}

// redcell.conf at the repository's root is exampleConfig: it lists every
// directive, and uncommented it starts a node with every default.
func TestExampleConfig(t *testing.T) {
	want := exampleConfig()
	if *update {
		if err := os.WriteFile(exampleConfigPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(exampleConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("redcell.conf is not what the flags define: go test ./cmd/redcell -run TestExampleConfig -update")
	}
	defineFlags(&config{}, io.Discard).VisitAll(func(f *flag.Flag) {
		if !notDirectives[f.Name] && !regexp.MustCompile(`(?m)^# `+regexp.QuoteMeta(f.Name)+` `).Match(got) {
			t.Errorf("redcell.conf lacks %s", f.Name)
		}
	})
	// The directive closes each block (a blank line or the end follows).
	directive := regexp.MustCompile(`(?m)^# ([a-z0-9-]+ .*\n)(\n|\z)`)
	directives := 0
	defineFlags(&config{}, io.Discard).VisitAll(func(f *flag.Flag) {
		if !notDirectives[f.Name] {
			directives++
		}
	})
	if n := len(directive.FindAllString(string(got), -1)); n != directives {
		t.Errorf("redcell.conf has %d directives, the flags define %d", n, directives)
	}
	uncommented := directive.ReplaceAllString(string(got), "$1$2")
	path := writeFile(t, filepath.Join(t.TempDir(), "all.conf"), uncommented)
	c, err := parseFlags([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	def, _ := parseFlags(nil, io.Discard)
	def.configFile = path
	if !reflect.DeepEqual(c, def) {
		t.Errorf("redcell.conf uncommented:\n%+v\nthe defaults:\n%+v", c, def)
	}
}

// The rewrite writes the runtime settings in the flags' names and Redis's
// formats, and a changed password from --requirepass-file goes back to
// that file, not into the config file.
func TestConfigRewriter(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "redcell.conf"), "# keep\nport 7000\nloglevel notice\nmaxmemory 100mb\n")
	cfg, err := parseFlags([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	level := new(slog.LevelVar)
	level.Set(slog.LevelError)
	r := newConfigRewriter(cfg, "", level)
	params := map[string]string{
		"maxclients": "10000", "timeout": "30", "maxmemory": "0", "proto-max-bulk-len": "536870912",
		"client-query-buffer-limit": "2147483648", "protected-mode": "yes", "requirepass": "",
		"client-output-buffer-limit": "normal 1048576 0 0 replica 268435456 67108864 60 pubsub 33554432 8388608 60",
	}
	if err := r.rewrite(params); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# keep\nport 7000\nlog-level error\nmaxmemory 0\n\n" + conffile.Signature +
		"\ntimeout 30\nclient-query-buffer-limit 2gb\nclient-output-buffer-limit normal 1mb 0 0\n"
	if string(got) != want {
		t.Errorf("rewrite:\n%s\nwant:\n%s", got, want)
	}

	passFile := writeFile(t, filepath.Join(dir, "pass"), "old\n")
	path = writeFile(t, filepath.Join(dir, "p.conf"), "requirepass-file "+passFile+"\n")
	cfg, err = parseFlags([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r = newConfigRewriter(cfg, "old", level)
	params["requirepass"] = "new"
	if err := r.rewrite(params); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(passFile); string(b) != "new\n" {
		t.Errorf("password file: %q", b)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "requirepass ") {
		t.Errorf("the password went into the config file:\n%s", b)
	}
	params["requirepass"] = ""
	if err := r.rewrite(params); err == nil {
		t.Error("clearing a password from --requirepass-file: no error")
	}
}

// No config file makes parseFlags panic: it starts or says why not.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{"port 7000\n", "loglevel verbose\nbootstrap YES\n", "client-output-buffer-limit normal 1mb\n",
		"raft-heartbeat-timeout 1s\nraft-lease-timeout 2s\n", "include /nonexistent\n", "\"port\" '1\n", "tls-port 6380\n"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "fuzz.conf")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = parseFlags([]string{"--config", path, "--port", "7001"}, io.Discard)
	})
}
