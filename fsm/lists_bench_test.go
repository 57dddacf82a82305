package fsm

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"

	"github.com/redcell/redcell/request"
)

// BenchmarkListCommands measures each list command's own cost in the state
// machine (the handler on one key, no log entry around it) on lists of 10,
// 300 and 3000 timestamps (13 bytes each, 15 stored), the shapes a rate
// limiter's sliding log takes: LPUSH + LTRIM to the limit, RPUSH + LPOP,
// and the reads that check the oldest entry. Besides wall time it reports
// the process's CPU time per op (cpu-ns/op), which a machine shared with
// other work inflates far less. Figures in DESIGN.md, "Lists".
func BenchmarkListCommands(b *testing.B) {
	key := []byte("rl:user:12345")
	ts := []byte("1700000000123")
	req := func(code request.Code, vals [][]byte, args ...int64) request.Request {
		r := request.Request{Code: code, Key: key, Keys: vals}
		r.SetArgs(args...)
		return r
	}
	for _, n := range []int64{10, 300, 3000} {
		f := New(Config{Stripes: 1})
		const now = 1
		var res request.Result
		fill := req(request.ListPush, [][]byte{ts}, request.ListRight)
		for range n {
			f.listPush(&fill, now, &res)
		}
		run := func(name string, steps ...request.Request) {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuNs()
				for b.Loop() {
					for i := range steps {
						res = request.Result{}
						handlers[steps[i].Code].run(f, &steps[i], now, &res)
					}
				}
				b.ReportMetric(float64(cpuNs()-cpu0)/float64(b.N), "cpu-ns/op")
				if res.Kind == request.KindError {
					b.Fatalf("%s: error %d", name, res.Err)
				}
			})
		}
		run("lpush+ltrim", req(request.ListPush, [][]byte{ts}, 0), req(request.ListTrim, nil, 0, n-1))
		run("rpush+lpop", req(request.ListPush, [][]byte{ts}, request.ListRight), req(request.ListPop, nil, 0, request.ListNoCount))
		run("lpush+rpop", req(request.ListPush, [][]byte{ts}, 0), req(request.ListPop, nil, request.ListRight, request.ListNoCount))
		run("llen", req(request.ListLen, nil))
		run("lindex0", req(request.ListIndex, nil, 0, 0))
		run("lindex-1", req(request.ListIndex, nil, -1, 0))
		run("lindex-mid", req(request.ListIndex, nil, n/2, 0))
		run("lrange0-9", req(request.ListRange, nil, 0, 9))
		run("lrange-all", req(request.ListRange, nil, 0, -1))
		run("lset-mid", req(request.ListSet, [][]byte{[]byte(strconv.Itoa(1700000000999))}, n/2, 0))
	}
}

// cpuNs is the process's user and system CPU time so far, in ns.
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
