package scripting

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// The oracle for the four libraries is redis-server 7.0: each case is a Lua
// chunk run by EVAL on Redis and in a gopher-lua state with openRedisLibs,
// inside pcall, its results turned into one string by libsOracleShow (numbers
// as the bytes of their doubles, tables with their keys sorted, since C Lua and
// gopher-lua iterate tables in different orders), and compared byte for byte.

// libsOracleShow is a Lua function turning any values into a deterministic
// string. It uses only string.byte/format, table.sort/concat and type, so
// that it means the same on both interpreters.
const libsOracleShow = `
local show
local function num(n)
  if n ~= n then return 'n:nan' end
  if n == 0 then if 1/n < 0 then return 'n:-0' end return 'n:0' end
  if n == 1/0 then return 'n:inf' end
  if n == -1/0 then return 'n:-inf' end
  -- the exact double: integer part and a binary fraction, no tostring
  local neg = n < 0
  if neg then n = -n end
  local e = 0
  while n >= 2^53 do n = n / 2; e = e + 1 end
  local f = 0
  while n ~= math.floor(n) and f < 1100 do n = n * 2; f = f + 1 end
  local s = string.format('%d', n)
  if neg then s = '-' .. s end
  return 'n:' .. s .. '*2^' .. (e - f)
end
local function str(s)
  local out = {}
  for i = 1, #s do
    local b = string.byte(s, i)
    if b >= 32 and b < 127 and b ~= 92 then out[#out+1] = string.char(b)
    else out[#out+1] = string.format('\\%02x', b) end
  end
  return 's:"' .. table.concat(out) .. '"'
end
show = function(v, depth)
  local t = type(v)
  if t == 'number' then return num(v)
  elseif t == 'string' then return str(v)
  elseif t == 'table' then
    if depth > 20 then return 'table:deep' end
    local items = {}
    for k, x in pairs(v) do items[#items+1] = show(k, depth+1) .. '=' .. show(x, depth+1) end
    table.sort(items)
    return '{' .. table.concat(items, ',') .. '}'
  elseif t == 'userdata' then
    if v == cjson.null then return 'cjson.null' end
    return 'userdata'
  end
  return t .. ':' .. (t == 'boolean' and (v and 'true' or 'false') or '')
end
local function showAll(...)
  local out = {}
  for i = 1, select('#', ...) do out[#out+1] = show(select(i, ...), 0) end
  return select('#', ...) .. '|' .. table.concat(out, ' ')
end
`

// libsOracleScript wraps a case's chunk: its results under pcall, shown.
func libsOracleScript(chunk string) string {
	return libsOracleShow + "return showAll(pcall(function()\n" + chunk + "\nend))"
}

// libsOracleResetConfig puts Redis's cjson configuration back to its
// defaults: it lives in the server's Lua state and outlives a script.
const libsOracleResetConfig = `cjson.encode_sparse_array(false, 2, 10) cjson.encode_max_depth(1000) cjson.decode_max_depth(1000)
cjson.encode_number_precision(14) cjson.encode_keep_buffer(true) cjson.encode_invalid_numbers(false) cjson.decode_invalid_numbers(true)
return 'ok'`

type libsOracleCase struct {
	name  string
	chunk string
}

var libsOracleUpdate = flag.Bool("libs.update", false, "rewrite "+libsGoldenPath+" from redis-server's answers")

// libsGoldenPath holds the SHA-256 of Redis's answer to every case, so that
// TestLibsAgainstGolden checks the libraries where redis-server is missing
// (the answers themselves, with the generated cases, weigh most of a
// megabyte; TestLibsAgainstRedis shows them).
const libsGoldenPath = "testdata/libs_oracle_golden.txt"

func TestLibsAgainstRedis(t *testing.T) {
	redis := libsOracleStartRedis(t)
	golden := libsReadGolden(t)
	var update strings.Builder
	for _, c := range libsOracleCases() {
		script := libsOracleScript(c.chunk)
		want, err := redis.eval(script)
		if err != nil {
			t.Errorf("%s: redis: %v", c.name, err)
			continue
		}
		if _, err := redis.eval(libsOracleResetConfig); err != nil {
			t.Fatalf("resetting cjson's configuration: %v", err)
		}
		fmt.Fprintf(&update, "%s\t%s\n", c.name, libsDigest(want))
		if g, ok := golden[c.name]; !*libsOracleUpdate && (!ok || g != libsDigest(want)) {
			t.Errorf("%s: %s is stale (go test ./scripting -run TestLibsAgainstRedis -libs.update)", c.name, libsGoldenPath)
		}
		got, err := libsRunLocal(script)
		if err != nil {
			t.Errorf("%s: gopher-lua: %v", c.name, err)
			continue
		}
		if got != want {
			t.Errorf("%s: %s\n redis: %s\n  ours: %s", c.name, c.chunk, want, got)
		}
	}
	if *libsOracleUpdate {
		if err := os.WriteFile(libsGoldenPath, []byte(update.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLibsAgainstGolden compares the libraries with Redis's recorded
// answers; it needs no redis-server.
func TestLibsAgainstGolden(t *testing.T) {
	golden := libsReadGolden(t)
	for _, c := range libsOracleCases() {
		want, ok := golden[c.name]
		if !ok {
			t.Errorf("%s: not in %s (go test ./scripting -run TestLibsAgainstRedis -libs.update)", c.name, libsGoldenPath)
			continue
		}
		got, err := libsRunLocal(libsOracleScript(c.chunk))
		if err != nil {
			t.Errorf("%s: gopher-lua: %v", c.name, err)
			continue
		}
		if libsDigest(got) != want {
			t.Errorf("%s: %s\n ours: %s\n differs from Redis's answer (run TestLibsAgainstRedis to see it)", c.name, c.chunk, got)
		}
	}
}

func libsDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func libsReadGolden(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(libsGoldenPath)
	if errors.Is(err, os.ErrNotExist) && *libsOracleUpdate {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	golden := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		name, digest, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s: bad line %q", libsGoldenPath, line)
		}
		golden[name] = digest
	}
	return golden
}

// libsNewState is a bare state with the libraries Redis opens that matter
// here (base, table, string, math) and openRedisLibs.
func libsNewState() *lua.LState {
	// A growable registry: a C function may return up to 8000 values
	// (LUAI_MAXCSTACK), more than gopher-lua's default fixed registry holds.
	L := lua.NewState(lua.Options{SkipOpenLibs: true, RegistrySize: 1024, RegistryMaxSize: 64 * 1024})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	openRedisLibs(L)
	return L
}

func libsRunLocal(script string) (string, error) {
	L := libsNewState()
	defer L.Close()
	// Redis names a script's chunk "@user_script", which C Lua shows as
	// "user_script" in positions; gopher-lua shows a chunk's name as given.
	fn, err := L.Load(strings.NewReader(script), "user_script")
	if err != nil {
		return "", err
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		return "", err
	}
	return L.Get(-1).String(), nil
}

// libsOracleRedis is a connection to a redis-server this test started.
type libsOracleRedis struct {
	conn net.Conn
	r    *bufio.Reader
}

// libsOracleStartRedis starts redis-server 7 on a free 127.0.0.1 port, not
// durable, stopped by PID and its directory removed when the test ends. It
// skips the test when redis-server is not installed, unless CI=true.
func libsOracleStartRedis(t *testing.T) *libsOracleRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed")
		}
		t.Skip("redis-server is not installed")
	}
	dir := t.TempDir()
	for attempt := 0; attempt < 5; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir)
		logf, err := os.Create(dir + "/redis.log")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { // waits for the process; closes exited when it is gone
			_ = cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			logf.Close()
		})
		addr := "127.0.0.1:" + strconv.Itoa(port)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) { // polling a bounded condition
			select {
			case <-exited:
				end = time.Now()
				continue
			default:
			}
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				continue
			}
			c := &libsOracleRedis{conn: conn, r: bufio.NewReader(conn)}
			if reply, err := c.do("PING"); err == nil && reply == "+PONG" {
				t.Cleanup(func() { conn.Close() })
				return c
			}
			conn.Close()
		}
		_ = cmd.Process.Kill()
	}
	t.Fatal("redis-server did not start")
	return nil
}

// do sends a command and returns its reply: "+status", "-error", or a bulk
// string's bytes prefixed with "$".
func (c *libsOracleRedis) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+', '-', ':':
		return line, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return line, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return "", err
		}
		return "$" + string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func (c *libsOracleRedis) eval(script string) (string, error) {
	r, err := c.do("EVAL", script, "0")
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(r, "$") {
		return "", fmt.Errorf("reply %q", r)
	}
	return r[1:], nil
}
