package scripting

import (
	"os"
	"strconv"
	"testing"
)

// redisRateAllowN is go-redis/redis_rate v10's allowN script (lua.go),
// verbatim: GCRA with TIME, GET and SET EX. The bench's copy, which its
// scripts mode sends to every server.
func redisRateAllowN(tb testing.TB) string {
	b, err := os.ReadFile("../bench/redis_rate.lua")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// BenchmarkRun runs redis_rate's GCRA script on 1000 keys against the fake
// keyspace: the engine's cost per call (compiled once, interpreter state
// and tables reused), without the state machine's.
//
//	go test ./scripting -run '^$' -bench BenchmarkRun -benchmem
func BenchmarkRun(b *testing.B) {
	e := NewEngine(Config{})
	f := newFake()
	body := []byte(redisRateAllowN(b))
	sha := SHA1Hex(body)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = []byte("rate:" + strconv.Itoa(i))
	}
	args := [][]byte{[]byte("10"), []byte("10"), []byte("1"), []byte("1")}
	c := &Call{Body: body, SHA: sha, Keys: keys[:1], Args: args, Now: 1_700_000_000_000_000_000, Seed: 1}
	var dst []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Keys = keys[i%len(keys) : i%len(keys)+1]
		c.Now += 1000
		dst = e.Run(dst[:0], c, f)
		if dst[0] != '*' {
			b.Fatalf("reply %q", dst)
		}
	}
}

// BenchmarkInstructions measures the VM's speed with the budget's
// per-instruction check: a loop of 10^6 iterations.
func BenchmarkInstructions(b *testing.B) {
	e := NewEngine(Config{})
	body := []byte("local n = 0 for i = 1, 1000000 do n = n + i end return n")
	c := &Call{Body: body, SHA: SHA1Hex(body)}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.Run(nil, c, newFake())
	}
}
