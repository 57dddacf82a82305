package server

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// memoryFigures are the process's memory in MEMORY STATS's terms: Go's
// heap stands for Redis's allocator (jemalloc), the keyspace's arenas and
// indexes (Backend.Memory) for its dataset.
type memoryFigures struct {
	allocated, active, resident, rss, peak, startup int64
	dataset, keys                                   int64
}

// memPeak is the highest heap allocation INFO memory or MEMORY saw (Redis
// samples its peak in its cron; Redcell when asked).
type memPeak struct{ peak, startup atomic.Int64 }

func (s *Server) memoryFigures() memoryFigures {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := s.cfg.Backend.Memory()
	f := memoryFigures{
		allocated: int64(ms.HeapAlloc),
		active:    int64(ms.HeapInuse),
		resident:  int64(ms.HeapSys - ms.HeapReleased),
		rss:       readRSS(),
		startup:   s.diag.mem.startup.Load(),
		dataset:   m.KeyspaceArenaBytes + m.KeyspaceIndexBytes,
		keys:      s.cfg.Backend.Keyspace().Keys,
	}
	for {
		p := s.diag.mem.peak.Load()
		if f.allocated <= p || s.diag.mem.peak.CompareAndSwap(p, f.allocated) {
			f.peak = max(p, f.allocated)
			break
		}
	}
	return f
}

// MEMORY <USAGE key [SAMPLES count] | STATS | DOCTOR | MALLOC-STATS | PURGE | HELP>
// Memory diagnostics: a key's footprint in this node's keyspace, the
// process's memory in Redis's fields, a report.
func cmdMemory(c *conn, s *commands.Spec, args [][]byte) {
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "MEMORY"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	switch sub.Name {
	case "memory|help":
		writeHelp(c, "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR",
			"    Return memory problems reports.",
			"MALLOC-STATS",
			"    Return internal statistics report from the memory allocator.",
			"PURGE",
			"    Attempt to purge dirty pages for reclamation by the allocator.",
			"STATS",
			"    Return information about the memory usage of the server.",
			"USAGE <key> [SAMPLES <count>]",
			"    Return memory in bytes used by <key> and its value. Nested values are",
			"    sampled up to <count> times (default: 5, 0 means sample all).",
			"HELP",
			"    Prints this help.")
	case "memory|usage":
		memoryUsage(c, args)
	case "memory|stats":
		memoryStats(c)
	case "memory|doctor":
		c.w.Verbatim(memoryDoctor(c.s.memoryFigures()))
	case "memory|malloc-stats":
		// Redis answers jemalloc's report; Redcell's allocator is Go's.
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		c.w.Verbatim(fmt.Sprintf("___ Begin Go runtime memory statistics ___\nHeapAlloc: %d\nHeapInuse: %d\nHeapIdle: %d\nHeapReleased: %d\nHeapSys: %d\nHeapObjects: %d\nStackInuse: %d\nSys: %d\nNumGC: %d\n___ End Go runtime memory statistics ___\n",
			ms.HeapAlloc, ms.HeapInuse, ms.HeapIdle, ms.HeapReleased, ms.HeapSys, ms.HeapObjects, ms.StackInuse, ms.Sys, ms.NumGC))
	case "memory|purge":
		debug.FreeOSMemory() // a collection, then the free pages back to the OS
		c.w.OK()
	}
}

// memoryUsage is MEMORY USAGE key [SAMPLES count]: Redis's option checks,
// then the key's footprint read from this node's own state machine
// (ReadLocal): never forwarded, never in the log (commands/diagnostics.go).
// SAMPLES changes nothing: a record's size is known without sampling.
func memoryUsage(c *conn, args [][]byte) {
	for j := 3; j < len(args); j++ {
		if !commands.EqualFold(args[j], "samples") || j+1 >= len(args) {
			c.fail(commands.ErrSyntax)
			return
		}
		n, ok := commands.ParseInt(args[j+1])
		if !ok {
			c.fail(commands.ErrNotInteger)
			return
		}
		if n < 0 {
			c.fail(commands.ErrSyntax)
			return
		}
		j++
	}
	reqs := [1]request.Request{{Code: request.MemoryUsage, Key: args[2]}}
	var res [1]request.Result
	if err := c.s.cfg.Backend.ReadLocal(reqs[:], res[:]); err != nil {
		c.fail(backendErrText(err))
		return
	}
	c.writeResult(&res[0])
}

// memoryStats is MEMORY STATS: Redis 7.0's fields in its order, with
// Go's heap as the allocator. What Redcell has none of (replication
// backlog, replica buffers, AOF buffer, cluster links, function caches)
// is 0; clients' buffers are not measured (0).
func memoryStats(c *conn) {
	f := c.s.memoryFigures()
	ratio := func(a, b int64) []byte {
		if b == 0 {
			return []byte("0")
		}
		return strconv.AppendFloat(nil, float64(a)/float64(b), 'g', 17, 64)
	}
	pct := func(a, b int64) []byte {
		if b <= 0 {
			return []byte("0")
		}
		return strconv.AppendFloat(nil, float64(a)*100/float64(b), 'g', 17, 64)
	}
	n := 27
	if f.keys > 0 {
		n++
	}
	grown := max(f.allocated-f.startup, 0)
	overhead := max(f.allocated-f.dataset, 0)
	c.w.MapHeader(n)
	ints := func(kv ...any) {
		for i := 0; i < len(kv); i += 2 {
			c.w.BulkString(kv[i].(string))
			c.w.Int(kv[i+1].(int64))
		}
	}
	ints("peak.allocated", f.peak, "total.allocated", f.allocated, "startup.allocated", f.startup,
		"replication.backlog", int64(0), "clients.slaves", int64(0), "clients.normal", int64(0),
		"cluster.links", int64(0), "aof.buffer", int64(0), "lua.caches", int64(0), "functions.caches", int64(0))
	if f.keys > 0 {
		c.w.BulkString("db.0")
		c.w.MapHeader(3)
		ints("overhead.hashtable.main", int64(0), "overhead.hashtable.expires", int64(0), "overhead.hashtable.slot-to-keys", int64(0))
	}
	perKey := int64(0)
	if f.keys > 0 {
		perKey = grown / f.keys
	}
	ints("overhead.total", overhead, "keys.count", f.keys, "keys.bytes-per-key", perKey, "dataset.bytes", f.dataset)
	c.w.BulkString("dataset.percentage")
	c.w.Double(pct(f.dataset, grown))
	c.w.BulkString("peak.percentage")
	c.w.Double(pct(f.allocated, f.peak))
	ints("allocator.allocated", f.allocated, "allocator.active", f.active, "allocator.resident", f.resident)
	c.w.BulkString("allocator-fragmentation.ratio")
	c.w.Double(ratio(f.active, f.allocated))
	ints("allocator-fragmentation.bytes", f.active-f.allocated)
	c.w.BulkString("allocator-rss.ratio")
	c.w.Double(ratio(f.resident, f.active))
	ints("allocator-rss.bytes", f.resident-f.active)
	c.w.BulkString("rss-overhead.ratio")
	c.w.Double(ratio(f.rss, f.resident))
	ints("rss-overhead.bytes", f.rss-f.resident)
	c.w.BulkString("fragmentation")
	c.w.Double(ratio(f.rss, f.allocated))
	ints("fragmentation.bytes", f.rss-f.allocated)
}

// memoryDoctor is MEMORY DOCTOR's report, in Redis's words, for the two
// conditions Redcell can judge: a near-empty instance (under 5 MB
// allocated) and a peak above 150 % of what is allocated now.
func memoryDoctor(f memoryFigures) string {
	switch {
	case f.allocated < 5<<20:
		return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	case float64(f.peak)/float64(f.allocated) > 1.5:
		return "Sam, I detected a few issues in this Redis instance memory implants:\n\n" +
			" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n" +
			"I'm here to keep you safe, Sam. I want to help you.\n"
	}
	return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
}
