package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real rate-limit libraries of clients_ratelimit_test.go, each set up as
// its users set it up, with nothing changed but the Redis address:
//
//   - envoyproxy/ratelimit, the Envoy/Istio rate-limit service (a Go
//     program built from the Go module proxy by clients/envoy/build.sh, run
//     with clients/envoy/config.yaml), asked through its HTTP /json endpoint;
//   - Python limits (Debian's python3-limits) with its fixed-window
//     elastic-expiry strategy (plain commands), its fixed-window and its
//     moving-window strategies (Lua scripts), through
//     clients/python/limits_driver.py;
//   - rate-limiter-flexible on ioredis (npm, pinned by
//     clients/node/package-lock.json): RateLimiterRedisNonAtomic (MULTI and
//     plain commands) and RateLimiterRedis (a Lua script), through
//     clients/node/ratelimit.js;
//   - go-redis/redis_rate (GCRA in a Lua script reading TIME) and
//     ulule/limiter's Redis store (a fixed window in a Lua script loaded by
//     SCRIPT LOAD), Go modules called in the test's process
//     (clients_ratelimit_scripted_test.go);
//   - express-rate-limit with rate-limit-redis's store on node-redis (npm,
//     Lua scripts loaded by SCRIPT LOAD), an Express app run by
//     clients/node/express_ratelimit.js.
//
// Each answers one request at a time with what the library decided; the
// tests count those decisions.

// rateLimitLimit is the limit every library is configured with: requests
// admitted per window for one identifier.
const rateLimitLimit = 10

// rateLimitLib is one library attached to one Redcell address. hit is called
// from the test goroutine only, one request at a time.
type rateLimitLib struct {
	name string
	// hit asks the library whether one request of identifier id may pass.
	hit func(id string) hitResult
	// counterKey is the Redis key the library counts id's requests in (for
	// envoy's, the one of the current wall-clock day).
	counterKey func(id string) string
	// counted reads, through conn, how many requests of id the library's
	// state at counterKey(id) holds; nil for an integer counter (GET, 0
	// when missing).
	counted func(conn *respConn, id string) (int64, error)
	// admissionsOnly: the library's state counts admitted requests only (a
	// refusal leaves it as it was): redis_rate's theoretical arrival time,
	// limits' moving-window list. The others count refusals too.
	admissionsOnly bool
	// retriesUnknownOutcome: the library's client retries, unseen, a
	// request answered TRYAGAIN (go-redis does, up to its MaxRetries, since
	// Redis Cluster's TRYAGAIN promises the command was not run), while
	// Redcell's TRYAGAIN after a leader change says the write may or may not
	// have been applied. The request in flight at a leader's kill may then
	// count in the library's state once more than the library reports.
	retriesUnknownOutcome bool
}

// counter is lib.counted bound to conn: what the library's state holds for
// an identifier.
func (l *rateLimitLib) counter(conn *respConn) func(id string) (int64, error) {
	if l.counted != nil {
		return func(id string) (int64, error) { return l.counted(conn, id) }
	}
	get := counterOn(conn)
	return func(id string) (int64, error) { return get(l.counterKey(id)) }
}

// stateAfter is what lib's state must count after admitted admissions and
// refused refusals.
func (l *rateLimitLib) stateAfter(admitted, refused int) int64 {
	if l.admissionsOnly {
		return int64(admitted)
	}
	return int64(admitted + refused)
}

// hitResult is what the library answered for one request.
type hitResult struct {
	admitted bool
	// errText is the error the library reported instead of a decision
	// (Redcell unreachable, TRYAGAIN during a failover...); empty when it
	// decided.
	errText string
	// remaining is the requests left in the window as the library reports
	// them (envoy's limitRemaining, limits' get_window_stats,
	// rate-limiter-flexible's remainingPoints).
	remaining int64
	// msBeforeNext is rate-limiter-flexible's msBeforeNext (the key's PTTL
	// as the library read it) and redis_rate's ResetAfter in milliseconds;
	// -1 for the other libraries.
	msBeforeNext int64
}

// rateLimitLibs names the libraries and how to attach each to an address.
var rateLimitLibs = []struct {
	name string
	open func(t *testing.T, addr string) *rateLimitLib
	// wallWindow, for a library whose keys name a window of its own wall
	// clock (envoy's day), is the current window; nil for the others, whose
	// windows are the server's key expiry on Redcell's clock.
	wallWindow func() int64
	// window, when not nil, checks on one node how the library's window
	// follows Redcell's clock, moved from base with DEBUG CLOCK (c is a
	// connection to the node, id an identifier of its own).
	window func(t *testing.T, c *respConn, lib *rateLimitLib, base int64, id string)
}{
	{"envoy-ratelimit", openEnvoyRatelimit, envoyWindow, nil},
	{"python-limits", openPythonLimits, nil, checkElasticExpiry},
	{"python-limits-fixed", openPythonLimitsFixed, nil, checkLimitsFixedWindow},
	// The moving window is the driver's wall clock (time.time() in the
	// script's arguments); only the list's EXPIRE is Redcell's.
	{"python-limits-moving", openPythonLimitsMoving, nil, nil},
	{"rate-limiter-flexible", openRateLimiterFlexible, nil, checkFlexibleWindow},
	{"rate-limiter-flexible-atomic", openRateLimiterFlexibleAtomic, nil, checkFlexibleWindow},
	{"redis_rate", openRedisRate, nil, checkRedisRateGCRA},
	{"ulule-limiter", openUluleLimiter, nil, checkUluleWindow},
	{"express-rate-limit", openExpressRateLimit, nil, checkExpressWindow},
}

// --- envoyproxy/ratelimit ---

// envoyDaySeconds is clients/envoy/config.yaml's unit (day) in seconds: the
// window of the service's keys and the EXPIRE it sends with each INCRBY.
const envoyDaySeconds = 86400

// envoyBuild holds the service binary built once per test binary when
// REDCELL_ENVOY_RATELIMIT does not name one.
var envoyBuild struct {
	once sync.Once
	path string
	err  error
}

// envoyRatelimitBinary is the service's binary: REDCELL_ENVOY_RATELIMIT
// (.ci/run builds it before the tests), or clients/envoy/build.sh's result.
// A binary that cannot be had fails the test in CI and skips it elsewhere.
func envoyRatelimitBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("REDCELL_ENVOY_RATELIMIT"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("REDCELL_ENVOY_RATELIMIT: %v", err)
		}
		return p
	}
	envoyBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoDir(t), "clients", "envoy", "build.sh"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			envoyBuild.err = fmt.Errorf("clients/envoy/build.sh: %v\n%s", err, stderr.String())
			return
		}
		envoyBuild.path = strings.TrimSpace(string(out))
	})
	if envoyBuild.err != nil {
		t.Log(envoyBuild.err)
	}
	requireSetup(t, envoyBuild.err == nil, "envoyproxy/ratelimit's service (clients/envoy/build.sh)")
	return envoyBuild.path
}

// openEnvoyRatelimit starts the rate-limit service on free loopback ports
// with clients/envoy/config.yaml and REDIS_URL=addr, and waits until it
// answers its health check. The process is killed (by PID) when the test
// ends, its log printed if the test failed.
func openEnvoyRatelimit(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	bin := envoyRatelimitBinary(t)
	root := t.TempDir()
	confDir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(repoDir(t), "clients", "envoy", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "config.yaml"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(root, "ratelimit.log")
	var httpPort int
	// A port picked free may be taken before the service binds it; it then
	// exits, and is started again on new ports.
	for attempt := 0; ; attempt++ {
		ports := make([]int, 3)
		for i := range ports {
			if ports[i], err = freePort(); err != nil {
				t.Fatal(err)
			}
		}
		httpPort = ports[0]
		err = startEnvoyProcess(t, bin, logPath, envoyEnv(root, addr, ports))
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("envoyproxy/ratelimit did not start: %v\nlog:\n%s", err, readTail(logPath))
		}
	}
	url := "http://127.0.0.1:" + strconv.Itoa(httpPort) + "/json"
	client := &http.Client{Timeout: 60 * time.Second}
	return &rateLimitLib{
		name: "envoy-ratelimit",
		hit: func(id string) hitResult {
			return envoyHit(client, url, id)
		},
		counterKey: func(id string) string {
			return fmt.Sprintf("redcell_client_%s_%d", id, envoyWindow()*envoyDaySeconds)
		},
	}
}

// envoyWindow is the service's current day (its keys' window).
func envoyWindow() int64 { return time.Now().Unix() / envoyDaySeconds }

// envoyEnv is the service's whole environment: the README's settings, and
// free ports on loopback. EXPIRATION_JITTER_MAX_SECONDS=0 makes the EXPIRE
// exactly the unit (the default adds up to 300 random seconds), so that the
// test can check the TTL.
func envoyEnv(root, redisAddr string, ports []int) []string {
	return []string{
		"REDIS_SOCKET_TYPE=tcp",
		"REDIS_URL=" + redisAddr,
		"RUNTIME_ROOT=" + root,
		"RUNTIME_SUBDIRECTORY=ratelimit",
		"RUNTIME_WATCH_ROOT=false",
		"USE_STATSD=false",
		"DISABLE_STATS=true",
		"EXPIRATION_JITTER_MAX_SECONDS=0",
		"LOG_LEVEL=info",
		"HOST=127.0.0.1", "PORT=" + strconv.Itoa(ports[0]),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT=" + strconv.Itoa(ports[1]),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT=" + strconv.Itoa(ports[2]),
	}
}

// startEnvoyProcess starts the service and waits (bounded) for its HTTP
// health check to answer 200. It returns an error if the process exits or
// never becomes healthy; a started process is killed at the test's end.
func startEnvoyProcess(t *testing.T, bin, logPath string, env []string) error {
	t.Helper()
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { // the waiter: reaps the process, closes exited
		_ = cmd.Wait()
		lf.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("log of envoyproxy/ratelimit:\n%s", readTail(logPath))
		}
	})
	var port string
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PORT="); ok {
			port = p
		}
	}
	health := "http://127.0.0.1:" + port + "/healthcheck"
	client := &http.Client{Timeout: probeTimeout}
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("exited before answering its health check")
		default:
		}
		if resp, err := client.Get(health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("no healthy answer from %s within %v", health, readyTimeout)
		}
		time.Sleep(pollEvery) // polling the service's readiness with a deadline
	}
}

// envoyHit POSTs one request for descriptor client=id to /json: HTTP 200
// with overallCode OK is an admission, 429 with OVER_LIMIT a refusal, and
// anything else (the service answers 400 when Redis returned an error) the
// library's error.
func envoyHit(client *http.Client, url, id string) hitResult {
	body := fmt.Sprintf(`{"domain":"redcell","descriptors":[{"entries":[{"key":"client","value":%q}]}]}`, id)
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return hitResult{errText: err.Error(), msBeforeNext: -1}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		OverallCode string `json:"overallCode"`
		Statuses    []struct {
			LimitRemaining int64 `json:"limitRemaining"` // omitted when 0
		} `json:"statuses"`
	}
	_ = json.Unmarshal(raw, &out)
	remaining := int64(-1)
	if len(out.Statuses) == 1 {
		remaining = out.Statuses[0].LimitRemaining
	}
	switch {
	case resp.StatusCode == http.StatusOK && out.OverallCode == "OK":
		return hitResult{admitted: true, remaining: remaining, msBeforeNext: -1}
	case resp.StatusCode == http.StatusTooManyRequests && out.OverallCode == "OVER_LIMIT":
		return hitResult{admitted: false, remaining: remaining, msBeforeNext: -1}
	default:
		return hitResult{errText: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(raw))), msBeforeNext: -1}
	}
}

// readTail is the end of a log file, for failure messages.
func readTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return orNothing(lastLines(string(b), 60))
}

// --- Python limits and rate-limiter-flexible: line drivers ---

// lineDriver is a script that reads one request per line on stdin and
// answers one JSON object per line on stdout (limits_driver.py,
// ratelimit.js). Only the test goroutine calls ask; a reader goroutine
// moves stdout's lines to the lines channel until the script exits.
type lineDriver struct {
	name   string
	stdin  io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer // the script's stderr, read only after it exited
	exited chan struct{}
}

// startLineDriver runs argv and waits for its first line ({"ready": true,
// "version": ...}), which it logs. The process is killed (by PID) when the
// test ends.
func startLineDriver(t *testing.T, name string, argv ...string) *lineDriver {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &lineDriver{name: name, stdin: stdin, lines: make(chan string, 1), stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { // the reader: stdout's lines, then the exit
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		_ = cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-d.exited
	})
	var ready struct {
		Ready   bool   `json:"ready"`
		Version string `json:"version"`
	}
	if err := d.next(&ready); err != nil || !ready.Ready {
		t.Fatalf("%s did not start: %v %+v", name, err, ready)
	}
	t.Logf("%s %s", name, ready.Version)
	return d
}

// ask sends one line and decodes the answer into v.
func (d *lineDriver) ask(line string, v any) error {
	if _, err := io.WriteString(d.stdin, line+"\n"); err != nil {
		return fmt.Errorf("%s: writing a request: %w", d.name, err)
	}
	return d.next(v)
}

// next decodes the script's next line into v, waiting at most a minute
// (longer than any wait of Redcell's own during a failover).
func (d *lineDriver) next(v any) error {
	select {
	case line, ok := <-d.lines:
		if !ok {
			return fmt.Errorf("%s: stdout closed", d.name)
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			return fmt.Errorf("%s: answer %q: %w", d.name, line, err)
		}
		return nil
	case <-d.exited:
		return fmt.Errorf("%s exited:\n%s", d.name, d.stderr.String())
	case <-time.After(time.Minute):
		return fmt.Errorf("%s: no answer within a minute", d.name)
	}
}

// driverAnswer is both scripts' answer to one request.
type driverAnswer struct {
	Admitted     bool   `json:"admitted"`
	Remaining    int64  `json:"remaining"`
	Key          string `json:"key"`
	Error        string `json:"error"`
	MsBeforeNext *int64 `json:"msBeforeNext"`
}

// driverHit turns one request to a line driver into a hitResult. A driver
// that broke (no answer, not JSON) fails the test at once.
func driverHit(t *testing.T, d *lineDriver, id string) hitResult {
	t.Helper()
	var a driverAnswer
	if err := d.ask(id, &a); err != nil {
		t.Fatal(err)
	}
	r := hitResult{admitted: a.Admitted, errText: a.Error, remaining: a.Remaining, msBeforeNext: -1}
	if a.MsBeforeNext != nil {
		r.msBeforeNext = *a.MsBeforeNext
	}
	return r
}

// openPythonLimits runs limits_driver.py with Debian's python3-limits: the
// fixed-window elastic-expiry strategy, "10/minute", storage
// redis://<addr>.
func openPythonLimits(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	return openPythonLimitsStrategy(t, addr, "python-limits", "elastic")
}

// openPythonLimitsStrategy runs limits_driver.py with strategy (elastic,
// fixed or moving) and names the library name.
func openPythonLimitsStrategy(t *testing.T, addr, name, strategy string) *rateLimitLib {
	t.Helper()
	const python = "/usr/bin/python3"
	_, err := os.Stat(python)
	requireSetup(t, err == nil, python)
	requireSetup(t, exec.Command(python, "-c", "import limits").Run() == nil, "Python limits (Debian's python3-limits)")
	spec := strconv.Itoa(rateLimitLimit) + "/minute"
	d := startLineDriver(t, name, python, filepath.Join(repoDir(t), "clients", "python", "limits_driver.py"), "redis://"+addr, spec, strategy)
	return &rateLimitLib{
		name:       name,
		hit:        func(id string) hitResult { return driverHit(t, d, id) },
		counterKey: func(id string) string { return "LIMITER/" + id + "/" + strconv.Itoa(rateLimitLimit) + "/1/minute" },
	}
}

// limitsWindowSeconds is the window of "10/minute".
const limitsWindowSeconds = 60

// flexibleDurationSeconds is the RateLimiterRedisNonAtomic's duration.
const flexibleDurationSeconds = 60

// openRateLimiterFlexible runs ratelimit.js: RateLimiterRedisNonAtomic with
// points 10, duration 60, on ioredis connected to redis://<addr>.
func openRateLimiterFlexible(t *testing.T, addr string) *rateLimitLib {
	t.Helper()
	return openRateLimiterFlexibleMode(t, addr, "rate-limiter-flexible", "nonatomic")
}

// openRateLimiterFlexibleMode runs ratelimit.js with mode (nonatomic or
// atomic) and names the library name.
func openRateLimiterFlexibleMode(t *testing.T, addr, name, mode string) *rateLimitLib {
	t.Helper()
	node := requireTool(t, "node")
	dir := filepath.Join(repoDir(t), "clients", "node")
	requireSetup(t, installNodeClients(t, dir), "clients/node/node_modules (npm ci)")
	d := startLineDriver(t, name, node, filepath.Join(dir, "ratelimit.js"),
		"redis://"+addr, strconv.Itoa(rateLimitLimit), strconv.Itoa(flexibleDurationSeconds), mode)
	return &rateLimitLib{
		name:       name,
		hit:        func(id string) hitResult { return driverHit(t, d, id) },
		counterKey: func(id string) string { return "rlflx:" + id },
	}
}
