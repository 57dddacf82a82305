package scripting

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/resp3"
	"github.com/redcell/redcell/resp"
)

// oracleCases are scripts whose replies must be Redis 7.0's byte for byte,
// in RESP2 and RESP3: the pure-Lua parts of the engine (conversions,
// error texts, protection, the redis.* helpers) and the commands the fake
// keyspace implements.
var oracleCases = []string{
	// Return conversions of every Lua type.
	"return 1", "return -7.9", "return 3.99", "return 'hello'", "return ''", "return true", "return false", "return nil",
	"return {1, 'a', true, false, 3.9, -3.9}", "return {1, 2, nil, 4}", "return {}", "return {{1, {2, {3}}}, 'x'}",
	"return {ok='fine'}", "return {err='MY error'}", "return {err='x'}", "return {ok='a\\r\\nb'}",
	"return {1, {ok='in'}, {err='ERR inner'}}", "return {a=1, b=2}", "return {1, 2, x=3}",
	"return 1e300", "return -1e300", "return 0/0",
	// RESP3 forms, and RESP2 scripts returning them.
	"return {double=3.5}", "return {double=1/3}", "return {double=1/0}", "return {double=-1/0}",
	"return {map={a=1}}", "return {set={a=true}}", "return {big_number='12345678901234567890'}",
	"redis.setresp(3); return {map={x=1}}", "redis.setresp(3); return true", "redis.setresp(3); return false",
	"redis.setresp(3); return {true, false, 1}",
	// The helpers.
	"return redis.error_reply('boom')", "return redis.error_reply('-X boom')", "return redis.error_reply('MY boom')",
	"return redis.error_reply(1)", "return redis.status_reply('fine')", "return redis.status_reply()",
	"return redis.sha1hex('abc')", "return redis.sha1hex('')", "return redis.sha1hex()",
	"return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}", "return redis.breakpoint()",
	"return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
	"return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
	"return redis.set_repl(redis.REPL_ALL)", "return redis.set_repl(99)", "return redis.replicate_commands()",
	"return redis.setresp(4)", "return redis.setresp()", "redis.log(redis.LOG_DEBUG, 'x')", "return redis.log(99, 'x')",
	"return redis.log(1)",
	// Numbers and strings.
	"return tostring(1/3)", "return tostring(1e15)", "return tostring(2^53)", "return tostring(-0.5)", "return tostring(100)",
	"return string.format('%5.2f|%d|%s', 3.14159, 42, 'x')", "return string.rep('ab', 3)",
	"return {string.byte('ABC', 1, -1)}", "return string.upper('abc') .. string.lower('DEF')",
	"return (string.gsub('hello world', 'o', '0'))", "return table.concat({1, 2, 'x'}, ',')",
	"return tonumber('0x10')", "return tonumber('  12  ')", "return math.floor(-3.5)", "return math.huge",
	"return type(tostring)", "return #KEYS + #ARGV", "return {KEYS[1], ARGV[1], ARGV[2]}",
	// The base, string, table and math libraries.
	"return tonumber('abc')", "return string.sub('hello', 2, -2)", "return select(2, 'a', 'b', 'c')", "return {unpack({1, 2, 3})}",
	"return table.getn({1, 2})", "return {math.max(1, 5, 3), math.fmod(7, 3), math.pow(2, 10), math.abs(-3), math.sqrt(16), math.ceil(1.2)}",
	"return string.len('abc')", "return {string.find('hello world', '(o)(r)')}", "return {string.find('hello', 'l')}",
	"return {string.find('a.b', '.', 1, true)}", "return {string.match('key:123', '(%a+):(%d+)')}", "return string.match('abc', '()b()')",
	"return (string.gsub('abc', '%w', '%0%0'))", "return {string.gsub('hello', 'l+', function(s) return '[' .. s .. ']' end)}",
	"return {string.gsub('hello world', '(%w+)', {hello = 'HI'})}", "return {string.gsub('abc', '', '-')}", "return {string.gsub('abc', 'b', '%%')}",
	"return {string.gsub('aaa', 'a', 'b', 2)}", "local r = {} for w in string.gmatch('a b c', '%a') do r[#r + 1] = w end return r",
	"local r = {} for k, v in string.gmatch('a=1, b=2', '(%w+)=(%w+)') do r[#r + 1] = k .. v end return r",
	"return tostring(nil) .. tostring(true)", "return type(nil)", "return 10 / 3", "return {7 % 3, -7 % 3, 7 % -3}",
	"return math.floor(2^31 + 0.5)", "return 2^63", "return -2^63", "return tostring(2^63)", "return string.format('%d', 3.7)",
	"return string.format('%x|%X|%o', 255, 255, 8)", "return string.format('%5s|%-5s|', 'a', 'b')", "return string.format('%.3f', 1/3)",
	"return string.format('%g|%g|%g', 1e20, 0.1, 100)", "return string.format('%e', 12345.678)", "return string.format('%c%c', 72, 105)",
	"return string.rep('a', 0)", "return table.concat({}, ',')", "local t = {3, 1, 2} table.sort(t) return t",
	"local t = {'b', 'a', 'c'} table.sort(t, function(a, b) return a > b end) return t",
	"local t = {1, 2, 3} table.remove(t, 1) return t", "local t = {} table.insert(t, 'a') table.insert(t, 1, 'b') return t",
	"return next({})", "return rawequal('a', 'a')", "return #'hello'", "return ('x'):upper()", "return tonumber('1e2')",
	"return tonumber('10', 2)", "return tonumber('ff', 16)", "return tonumber(' 0x10 ')", "return tostring(-0)", "return tostring(1e100)",
	"return string.byte('')", "return string.char()", "return string.reverse('abc')", "return string.lower('AbC')",
	"return tostring(tonumber('  1.5e3  '))", "return tonumber('0x')", "return tonumber('1e')", "return tonumber('.5') * 10",
	"return tonumber('5.')", "return tonumber('1_000')", "return tonumber('-0x10')", "return tonumber('')", "return tonumber('1 2')",
	"return select('#', string.byte('abc', 1, 3))",
	"return table.concat({1, 2, 3}, ', ', 2, 3)", "return #{1, 2, 3, nil, 5}", "return math.min(3, 1, 2)",
	"return tostring(math.pi)", "return math.floor(-0.5)", "return (math.huge == 1/0) and 1 or 0",
	// Coroutines.
	"local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end) " +
		"local _, x = coroutine.resume(co, 1) local _, y = coroutine.resume(co, 10) return {x, y, coroutine.status(co)}",
	"local f = coroutine.wrap(function() coroutine.yield(1) coroutine.yield(2) end) return {f(), f()}",
	"return type(coroutine.running())", "local co = coroutine.create(function() error('in co') end) return {coroutine.resume(co)}",
	"local co = coroutine.create(function() error({err = 'X'}) end) local ok, e = coroutine.resume(co) return e",
	"local f = coroutine.wrap(function() error('in wrap', 0) end) f()",
	// Protection of globals.
	"return x", "x = 1", "string.x = 1", "redis.call = nil", "_G.y = 1", "return print",
	"return type(loadstring)", "return type(getfenv)", "return type(dofile)",
	"local t = setmetatable({}, {__index = function() error('deep') end}); return t.x",
	// Errors.
	"error('boom')", "error('boom', 0)", "error(123)", "error()", "error(nil)", "error(true)",
	"local ok, e = pcall(error) return tostring(e)", "error({err='MY boom'})", "local t = {} t[nil] = 1",
	"local function f(n) return f(n + 1) + 1 end return f(1)", "assert(false)", "assert(false, 'why')",
	"return {pcall(error, 'x')}", "return {pcall(error, 'x', 0)}", "local ok, e = pcall(error, {x=1}); return type(e)",
	// redis.call and redis.pcall.
	"return redis.call('set', KEYS[1], ARGV[1])", "redis.call('set', 'n', 1/3); return redis.call('get', 'n')",
	"redis.call('set', 'n', 100); return redis.call('get', 'n')", "redis.call('set', 'n', 1e20); return redis.call('get', 'n')",
	"return redis.call('get', 'missing')", "return {redis.call('get', 'missing')}", "return redis.call('incr', 'ctr')",
	"redis.call('set', 's', 'abc'); return redis.call('incr', 's')", "redis.call('set', 's', 'abc'); return redis.pcall('incr', 's')",
	"redis.call('set', 's', 'abc'); return {pcall(redis.call, 'incr', 's')}",
	"redis.call('set', 's', 'abc'); local ok, e = pcall(redis.call, 'incr', 's'); return type(e)",
	"redis.call('set', 's', 'abc'); local r = redis.pcall('incr', 's'); return r.err",
	"return redis.call('nosuch')", "return redis.pcall('nosuch')", "return redis.call('get')", "return redis.pcall('get', 'a', 'b')",
	"return redis.call('multi')", "return redis.call('exec')", "return redis.call('watch', 'x')", "return redis.call('subscribe', 'x')",
	"return redis.call('eval', 'return 1', '0')", "return redis.call('evalsha', 'abc', '0')", "return redis.call('script', 'load', 'return 1')",
	"return redis.call({})", "return redis.call('get', {})", "return redis.call()", "return redis.pcall()", "return redis.call(nil)",
	"return redis.call('ping')", "return redis.call('ping', 'hi')", "return redis.call('echo', 'hi')",
	"return redis.call('set', 'k')", "return redis.call('set', 'k', 'v', 'bogus')", "return redis.pcall('set', 'k', 'v', 'bogus')",
	"return redis.call('del', 'a', 'b')",
	"redis.call('set', 'k', 'v'); redis.setresp(3); return redis.call('get', 'k')",
	"redis.setresp(3); return {redis.call('get', 'missing')}",
	"redis.setresp(3); return type(redis.call('get', 'missing'))", "return type(redis.call('get', 'missing'))",
	// math.random with an explicit seed draws Redis's numbers.
	"math.randomseed(42); return {math.random(100), math.random(1, 1000), tostring(math.random())}",
	"math.randomseed(-7); return {math.random(10), math.random(10), math.random(10)}",
	"return math.random(0)", "return math.random(2, 1)",
	// Shebangs.
	"#!lua\nreturn 1", "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", "#!lua flags=bogus\nreturn 1",
	"#!python\nreturn 1", "#!lua x=1\nreturn 1",
}

func TestOracle(t *testing.T) {
	addr := startRedis(t)
	e := NewEngine(Config{})
	for _, proto := range []int{2, 3} {
		conn := dialRedis(t, addr, proto)
		for _, body := range oracleCases {
			conn.do(t, "FLUSHALL")
			want := conn.do(t, "EVAL", body, "1", "key1", "arg1", "arg2")
			got := e.Run(nil, &Call{Body: []byte(body), SHA: SHA1Hex([]byte(body)), Keys: [][]byte{[]byte("key1")},
				Args: [][]byte{[]byte("arg1"), []byte("arg2")}, Now: time.Now().UnixNano(), Seed: 1}, newFake())
			if proto == 2 {
				got = resp.AppendRESP2(nil, got)
			}
			if string(got) != want {
				t.Errorf("RESP%d %q:\n got %q\nwant %q", proto, body, got, want)
			}
		}
	}
}

// TestOracleTime checks TIME's shape inside a script against Redis: two
// bulk strings, seconds and microseconds.
func TestOracleTime(t *testing.T) {
	addr := startRedis(t)
	conn := dialRedis(t, addr, 2)
	want := conn.do(t, "EVAL", "return redis.call('time')", "0")
	it, _, _ := resp3.Read([]byte(want))
	if it.Type != '*' || it.N != 2 {
		t.Fatalf("redis TIME %q", want)
	}
	got := runScript(t, NewEngine(Config{}), newFake(), "return redis.call('time')", nil, nil)
	if got != "*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n" {
		t.Fatalf("TIME answered %q", got)
	}
}

// startRedis starts redis-server on a free port for the test and stops it
// by its PID at the end. Without redis-server the test is skipped, except
// on CI.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed")
		}
		t.Skip("redis-server is not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling for the port, bounded above
	}
}

type redisConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRedis(t *testing.T, addr string, proto int) *redisConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &redisConn{c: c, r: bufio.NewReader(c)}
	if proto == 3 {
		rc.do(t, "HELLO", "3")
	}
	return rc
}

// do sends a command and returns its reply's bytes.
func (rc *redisConn) do(t *testing.T, args ...string) string {
	t.Helper()
	var b []byte
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = appendBulk(b, a)
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(b); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		if rest, ok := skipRESP(got); ok && len(rest) == 0 {
			return string(got)
		}
		n, err := rc.r.Read(buf)
		if err != nil {
			t.Fatalf("reading the reply to %q: %v (so far %q)", args, err, got)
		}
		got = append(got, buf[:n]...)
	}
}

// skipRESP is resp3.Skip that also knows RESP2's null bulk and null array.
func skipRESP(b []byte) ([]byte, bool) {
	if len(b) >= 5 && (b[0] == '$' || b[0] == '*') && string(b[1:5]) == "-1\r\n" {
		return b[5:], true
	}
	it, rest, ok := resp3.Read(b)
	if !ok {
		return nil, false
	}
	n := it.N
	if it.Type == '%' {
		n *= 2
	}
	for range n {
		if rest, ok = skipRESP(rest); !ok {
			return nil, false
		}
	}
	return rest, true
}
