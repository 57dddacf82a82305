package systemtest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The container image cannot be run on the machines the tests run on (CI
// builds it with podman but cannot start a container), so its entry point
// is tested here instead: the binary these tests build, started with
// exactly the flags of the Containerfile's ENTRYPOINT and CMD. Three values
// are replaced, because a test process cannot have them as a container
// does: the port (a free one instead of 6379), the data dir (a temp dir
// instead of the /data volume) and the password file (a temp file instead
// of the /run/secrets/redcell-password secret). Every other flag is the
// image's own, so a flag added to the image that the binary refuses, or one
// that stops it serving clients, fails this test.

// containerfile is what the test reads of the Containerfile: the
// instructions that decide how the image runs.
type containerfile struct {
	entrypoint, cmd []string
	user            string
	volumes         []string
	exposed         []string
	copies          []string // each COPY's arguments, as written
}

// readContainerfile parses the Containerfile at path: one instruction a
// line after joining continuation lines, comments dropped. ENTRYPOINT and
// CMD must be in exec (JSON) form: the shell form needs a shell, which a
// scratch image has not.
func readContainerfile(path string) (containerfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return containerfile{}, err
	}
	var cf containerfile
	var lines []string
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") {
			continue
		}
		if c, ok := strings.CutSuffix(t, "\\"); ok {
			cur += c + " "
			continue
		}
		lines = append(lines, cur+t)
		cur = ""
	}
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "ENTRYPOINT", "CMD":
			var argv []string
			if err := json.Unmarshal([]byte(rest), &argv); err != nil {
				return cf, fmt.Errorf("%s %s: not in exec (JSON) form: %w", instr, rest, err)
			}
			if strings.ToUpper(instr) == "ENTRYPOINT" {
				cf.entrypoint = argv
			} else {
				cf.cmd = argv
			}
		case "USER":
			cf.user = rest
		case "VOLUME":
			var vols []string
			if err := json.Unmarshal([]byte(rest), &vols); err != nil {
				vols = strings.Fields(rest)
			}
			cf.volumes = append(cf.volumes, vols...)
		case "EXPOSE":
			cf.exposed = append(cf.exposed, strings.Fields(rest)...)
		case "COPY":
			cf.copies = append(cf.copies, rest)
		}
	}
	return cf, nil
}

// flagValue is the value of --name in argv ("--name value" or
// "--name=value"), and its index, or -1.
func flagValue(argv []string, name string) (string, int) {
	for i, a := range argv {
		if a == "--"+name && i+1 < len(argv) {
			return argv[i+1], i + 1
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, i
		}
	}
	return "", -1
}

// withFlagValue returns argv with the value of --name replaced.
func withFlagValue(argv []string, name, value string) []string {
	out := append([]string(nil), argv...)
	_, i := flagValue(out, name)
	if i < 0 {
		return out
	}
	if strings.HasPrefix(out[i], "--"+name+"=") {
		out[i] = "--" + name + "=" + value
	} else {
		out[i] = value
	}
	return out
}

// TestContainerEntryPoint: the Containerfile runs a non-root user on a
// /data volume, and its entry point, run as the tests run the binary,
// serves clients from beyond loopback with the password from its secret
// (NOAUTH without it, not protected mode's DENIED), and stops cleanly on
// SIGTERM. The compose files' commands, added to that entry point, are
// flags the binary accepts.
func TestContainerEntryPoint(t *testing.T) {
	t.Parallel()
	cf, err := readContainerfile(filepath.Join("..", "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.entrypoint) == 0 {
		t.Fatal("the Containerfile has no ENTRYPOINT")
	}
	if uid, err := strconv.Atoi(strings.Split(cf.user, ":")[0]); err != nil || uid == 0 {
		t.Errorf("USER %q: want a numeric user other than root (a scratch image has no /etc/passwd)", cf.user)
	}
	image := append(append([]string(nil), cf.entrypoint[1:]...), cf.cmd...)
	port, _ := flagValue(image, "port")
	dataDir, _ := flagValue(image, "data-dir")
	passFile, _ := flagValue(image, "requirepass-file")
	if port == "" || dataDir == "" || passFile == "" {
		t.Fatalf("the entry point %q must give --port, --data-dir and --requirepass-file (protected mode refuses remote clients without a password)", image)
	}
	if bind, _ := flagValue(image, "bind"); bind != "0.0.0.0" {
		t.Errorf("--bind %q: a container is reached from beyond its loopback, want 0.0.0.0", bind)
	}
	if !containsString(cf.volumes, dataDir) {
		t.Errorf("--data-dir %s is not a VOLUME (%q)", dataDir, cf.volumes)
	}
	if !containsString(cf.exposed, port) && !containsString(cf.exposed, port+"/tcp") {
		t.Errorf("--port %s is not EXPOSEd (%q)", port, cf.exposed)
	}
	owned := false
	for _, c := range cf.copies {
		f := strings.Fields(c)
		owned = owned || (strings.HasPrefix(f[0], "--chown="+strings.Split(cf.user, ":")[0]) && f[len(f)-1] == dataDir)
	}
	if !owned {
		t.Errorf("no COPY --chown=%s makes %s the user's (COPY lines: %q)", cf.user, dataDir, cf.copies)
	}
	binary := cf.entrypoint[0]
	if !regexp.MustCompile(`(?m)^COPY\s.*\s` + regexp.QuoteMeta(binary) + `\s*$`).MatchString(mustRead(t, filepath.Join("..", "Containerfile"))) {
		t.Errorf("the entry point runs %s, which no COPY puts in the image", binary)
	}

	const password = "container-test-password"
	pwPath := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwPath, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := newNode("container", t.TempDir(), t.TempDir())
	n.password = password
	n.argv = func(p int) []string {
		argv := withFlagValue(image, "port", strconv.Itoa(p))
		argv = withFlagValue(argv, "data-dir", n.dataDir)
		return withFlagValue(argv, "requirepass-file", pwPath)
	}
	registerNodeCleanup(t, n, 0)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("ran %s %s", redcellBinary, strings.Join(n.argv(n.port), " "))

	c := mustDial(t, n.addr())
	expectReply(t, c, wantErr("NOAUTH Authentication required."), "CL.THROTTLE", "k", "9", "10", "60")
	expectReply(t, c, wantStatus("OK"), "AUTH", password)
	expectReply(t, c, wantInts(0, 10, 9, -1, 6), "CL.THROTTLE", "k", "9", "10", "60")
	c.close()

	// Each compose service's command follows the entry point; the binary
	// must accept the whole line (--version parses and checks every flag,
	// then exits without starting).
	composes, _ := filepath.Glob(filepath.Join("..", "deploy", "compose*.yaml"))
	if len(composes) == 0 {
		t.Fatal("no deploy/compose*.yaml")
	}
	commandLine := regexp.MustCompile(`(?m)^\s+command:\s*(\[.*\])\s*$`)
	composeVar := regexp.MustCompile(`\$\{[A-Z0-9_]+:-(?P<default>[^}]*)\}`)
	for _, path := range composes {
		found := commandLine.FindAllStringSubmatch(mustRead(t, path), -1)
		if len(found) == 0 {
			t.Errorf("%s: no `command: [...]` line", path)
		}
		for _, m := range found {
			// ${NAME:-default} is compose's interpolation: the default,
			// or what the file says to set it to (--bootstrap, once).
			for _, value := range []string{"${default}", "--bootstrap"} {
				command := composeVar.ReplaceAllString(m[1], value)
				var extra []string
				if err := json.Unmarshal([]byte(command), &extra); err != nil {
					t.Errorf("%s: command %s: %v", path, command, err)
					continue
				}
				argv := append(append(append([]string(nil), image...), extra...), "--version")
				if out, err := exec.Command(redcellBinary, argv...).CombinedOutput(); err != nil {
					t.Errorf("%s: redcell %s: %v\n%s", path, strings.Join(argv, " "), err, out)
				}
			}
		}
	}

	// Last, since without an address beyond loopback it skips (fails on
	// CI): a client from beyond loopback, as every client of a container
	// is, is served once it gives the password, where protected mode
	// without one would close it with DENIED.
	rc := mustDial(t, net.JoinHostPort(nonLoopbackIPv4(t), strconv.Itoa(n.port)))
	defer rc.close()
	expectReply(t, rc, wantErr("NOAUTH Authentication required."), "PING")
	expectReply(t, rc, wantStatus("OK"), "AUTH", password)
	expectReply(t, rc, wantStatus("PONG"), "PING")
	n.mustStop(t)
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestSystemdUnitFlags: the example unit's ExecStart is a command line
// the binary accepts (--version parses and checks every flag, then exits),
// with systemd's ${STATE_DIRECTORY} and ${CREDENTIALS_DIRECTORY} standing
// for directories.
func TestSystemdUnitFlags(t *testing.T) {
	t.Parallel()
	unit := strings.ReplaceAll(mustRead(t, filepath.Join("..", "deploy", "redcell.service")), "\\\n", " ")
	m := regexp.MustCompile(`(?m)^ExecStart=(\S+)(.*)$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatal("deploy/redcell.service has no ExecStart")
	}
	dir := t.TempDir()
	args := strings.Fields(strings.NewReplacer("${STATE_DIRECTORY}", dir, "${CREDENTIALS_DIRECTORY}", dir).Replace(m[2]))
	if out, err := exec.Command(redcellBinary, append(args, "--version")...).CombinedOutput(); err != nil {
		t.Errorf("redcell %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, want := range []string{"ExecReload=/bin/kill -HUP $MAINPID", "Restart=on-failure", "LimitNOFILE=", "StateDirectory=redcell", "DynamicUser=yes"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	stop := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)$`).FindStringSubmatch(unit)
	if secs, err := strconv.Atoi(append(stop, "", "")[1]); err != nil || secs < 30 {
		t.Errorf("TimeoutStopSec %q: want at least 30 (seconds) for a leader's handover", stop)
	}
}
