// Command bench measures Redcell against Redis running the same CL.THROTTLE
// algorithm (bench/gcra.lua) in one run on one machine, and prints the ratios.
// Each mode writes its own results file, bench/results/<mode>.md, replacing
// the previous run's.
//
//	go run ./bench                                  # compare: one table, Redcell / Redis-Lua
//	go run ./bench -mode limiters                   # TB.TAKE and SL.HIT against their Lua scripts
//	go run ./bench -mode latency                    # one client, no pipelining: p50/p99
//	go run ./bench -mode datatypes                  # INCRBY+EXPIRE and a sorted-set log against Redis's native commands
//	go run ./bench -mode memory                     # bytes per key, RSS under key churn
//	go run ./bench -mode cluster                    # a local 3-node cluster against Redis-Lua
//	go run ./bench -mode failover                   # kill -9 a 3-node cluster's leader 20 times: the gaps
//	go run ./bench -mode restart                    # kill -9 and restart a lone node, a follower, a leader: time to serve
//	go run ./bench -mode all -servers redis -quick  # smoke check without Redcell
//	go run ./bench -mode pgo                        # write cmd/redcell/default.pgo (profile-guided optimisation)
//
// See bench/DESIGN.md for what is measured and why this way.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted (servers stopped, temp dirs removed): %w", err)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options are the parsed command-line flags.
type options struct {
	modes   []string
	servers []serverKind
	quick   bool
	// resultsDir holds one results file per mode, <mode>.md.
	resultsDir string
	// mdPath, when set (-md), is one file for every mode of the run instead
	// of the per-mode files: for experiments that must not replace the
	// results the README quotes.
	mdPath     string
	seconds    float64
	warmup     float64
	rounds     int
	dataParent string
	memory     memoryOptions
	pgoOut     string
	failover   failoverOptions
	restart    restartOptions
	// groupsQuotas are the groups mode's CPU quotas per node, in cores (0:
	// none, the bare machine).
	groupsQuotas []float64
	// baseline is the git revision of a second Redcell (-baseline), "" for none.
	baseline string
	// variants are the named flag combinations of -variants; their kinds
	// are in servers too, right after Redcell (and Redcell-baseline).
	variants []variant
	// slowDisk sizes the slowdisk mode.
	slowDisk slowDiskOptions
}

var allModes = []string{"compare", "limiters", "scripts", "libraries", "latency", "datatypes", "memory", "cluster"}

// slowDiskMode is not part of "all": it needs a second build of the
// server, and what it shows depends on the delays it injects, not on the
// machine.
const slowDiskMode = "slowdisk"

// failoverMode is not part of "all": it measures availability, not speed,
// and kills processes on purpose.
const failoverMode = "failover"

// restartMode is not part of "all" either: it kills processes on purpose
// and measures how soon they serve again.
const restartMode = "restart"

// groupsMode is not part of "all": it runs two 3-node clusters, and with
// -groups-quota it needs root for cgroups.
const groupsMode = "groups"

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "compare", "compare | limiters | scripts | libraries | latency | datatypes | memory | cluster | all (comma-separated list allowed); failover, restart, slowdisk, groups (not in all); or pgo alone: write cmd/redcell/default.pgo (see bench/pgo.go)")
	servers := fs.String("servers", "all", "servers to run: all, or a comma-separated list of redcell, redis (both Redis servers), redis-lua, redis-lua-fsync")
	quick := fs.Bool("quick", false, "short runs and 100k keys for a smoke check (results are marked as quick)")
	results := fs.String("results", "", "directory of the results files: each mode writes <mode>.md there, replacing the last run's (default bench/results in the repository)")
	md := fs.String("md", "", "write every mode's results to this one file instead of the per-mode files in -results (an experiment that must not replace them)")
	seconds := fs.Float64("seconds", 5, "target duration of each measured redis-benchmark run (1 with -quick); in the pgo mode, of each profile (default 10)")
	warmup := fs.Float64("warmup", 3, "seconds of the same load, unmeasured, before each measured run (0.5 with -quick)")
	rounds := fs.Int("rounds", 1, "repeat every scenario this many times (alternating servers each time) and report medians")
	tmp := fs.String("tmp", "", "parent directory for data dirs; must not be tmpfs for durable numbers (default $TMPDIR or /tmp)")
	keys := fs.Int("keys", 1000000, "memory and datatypes modes: distinct keys to load per memory row; restart mode: keys of the large log (100000 with -quick)")
	churnFor := fs.Duration("churn", 30*time.Second, "memory mode: duration of the churn phase (5s with -quick)")
	churnRate := fs.Int("churn-rate", 50000, "memory mode: new one-second keys per second during churn")
	memFamilies := fs.String("families", "cl,tb,sl", "memory mode: limiter families to load, each on a fresh server (cl, tb, sl or all)")
	slHits := fs.Int("sl-hits", 10, "memory mode: hits per sliding-log key (limit 10), at distinct instants")
	baseline := fs.String("baseline", "", "a git revision (commit, tag, HEAD~3) whose Redcell runs as one more server, Redcell-baseline, right after Redcell in every round of compare, limiters, scripts, libraries, latency, datatypes and memory, and as a second 3-node cluster in cluster (not in pgo, failover, restart, slowdisk): a change measured against the same minutes of the same machine; each mode, and the run, ends with the rows that fell by more than 5 %")
	variants := fs.String("variants", "", "named flag combinations of this commit's Redcell, each run as one more server Redcell[name] right after Redcell (and Redcell-baseline) in compare, limiters, scripts, libraries, latency, datatypes, memory and slowdisk (not in cluster, failover, restart, pgo), e.g. 'direct=--direct-wal-sync;procs2=--procs 2'; each mode ends with the default beside each variant")
	fsyncDelays := fs.String("fsync-delays", "0,500us,1ms,2ms", "slowdisk mode: how much longer each WAL sync takes, one set of Redcell servers per delay (0: the slow-disk build with nothing injected)")
	pgoOut := fs.String("pgo-out", "", "pgo mode: where the merged profile goes (default cmd/redcell/default.pgo in the repository)")
	groupsQuota := fs.String("groups-quota", "0,0.25", "groups mode: each node's CPU quota in cores, one run of both clusters per value (0: the bare machine; others need root and cgroup v1's cpu controller)")
	kills := fs.Int("kills", 20, "failover mode: how many times the leader is killed (3 with -quick); 0 measures one quiet window only")
	foClients := fs.Int("failover-clients", 2, "failover mode: clients per node")
	cpuHogs := fs.Int("cpu-hogs", 0, "failover mode: busy-loop processes run beside the cluster (a loaded machine)")
	quiet := fs.Duration("quiet", 3*time.Second, "failover mode: steady load before each kill and after the last, in which any election is a spurious one")
	restarts := fs.Int("restarts", 5, "restart mode: restarts per row (2 with -quick)")
	restartDown := fs.Duration("restart-down", 3*time.Second, "restart mode: how long a cluster node stays down before its restart (1s with -quick)")
	keepLogs := fs.String("keep-logs", "", "failover mode: copy the nodes' logs into this directory at the end")
	nodeFlags := fs.String("node-flags", "", "failover mode: extra flags for every node, space-separated (e.g. \"--raft-heartbeat-timeout 200ms\")")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	o := options{quick: *quick, resultsDir: *results, mdPath: *md, seconds: *seconds, warmup: *warmup, rounds: *rounds, dataParent: *tmp,
		memory: memoryOptions{keys: *keys, churnFor: *churnFor, churnRate: *churnRate, conns: 4, slHits: *slHits}, pgoOut: *pgoOut,
		baseline: strings.TrimSpace(*baseline),
		failover: failoverOptions{kills: *kills, clientsPerNode: *foClients, cpuHogs: *cpuHogs, quiet: *quiet, nodeFlags: strings.Fields(*nodeFlags), keepLogs: *keepLogs},
		restart:  restartOptions{rounds: *restarts, largeKeys: *keys, downFor: *restartDown}}
	for _, q := range strings.Split(*groupsQuota, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
		if err != nil || v < 0 || v > 64 {
			return options{}, fmt.Errorf("-groups-quota: %q is not a number of cores", q)
		}
		o.groupsQuotas = append(o.groupsQuotas, v)
	}
	if o.quick {
		if !set["kills"] {
			o.failover.kills = 3
		}
		if !set["seconds"] {
			o.seconds = 1
		}
		if !set["warmup"] {
			o.warmup = 0.5
		}
		if !set["keys"] {
			o.memory.keys = 100000
			o.restart.largeKeys = 100000
		}
		if !set["restarts"] {
			o.restart.rounds = 2
		}
		if !set["restart-down"] {
			o.restart.downFor = time.Second
		}
		if !set["churn"] {
			o.memory.churnFor = 5 * time.Second
		}
	}
	var err error
	if o.modes, err = parseModes(*mode); err != nil {
		return options{}, err
	}
	if slices.Equal(o.modes, []string{"pgo"}) && !set["seconds"] && !o.quick {
		o.seconds = 10 // a profile, not a measured run: more samples
	}
	if o.servers, err = parseServers(*servers); err != nil {
		return options{}, err
	}
	if o.slowDisk.delays, err = parseDelays(*fsyncDelays); err != nil {
		return options{}, err
	}
	if o.baseline != "" {
		if slices.Equal(o.modes, []string{"pgo"}) {
			return options{}, fmt.Errorf("-baseline runs in compare, limiters, scripts, libraries, latency, datatypes, memory and cluster, not in -mode %s", o.modes[0])
		}
		// Right after Redcell, which parseServers puts first when chosen:
		// the alternation order of allServerKinds.
		at := 0
		if len(o.servers) > 0 && o.servers[0] == kindRedcell {
			at = 1
		}
		o.servers = slices.Insert(o.servers, at, kindRedcellBaseline)
	}
	if strings.TrimSpace(*variants) != "" {
		if slices.Equal(o.modes, []string{"pgo"}) {
			return options{}, fmt.Errorf("-variants runs in compare, limiters, scripts, libraries, latency, datatypes, memory and slowdisk, not in -mode %s", o.modes[0])
		}
		if !slices.Contains(o.servers, kindRedcell) {
			return options{}, errors.New("-variants needs redcell in -servers: each variant is compared with Redcell's defaults")
		}
		if o.variants, err = parseVariants(*variants); err != nil {
			return options{}, err
		}
		// Right after Redcell and Redcell-baseline, before the Redis servers.
		at := slices.IndexFunc(o.servers, func(k serverKind) bool { return !k.isRedcell() })
		if at < 0 {
			at = len(o.servers)
		}
		kinds := make([]serverKind, len(o.variants))
		for i, v := range o.variants {
			kinds[i] = v.kind()
		}
		o.servers = slices.Insert(o.servers, at, kinds...)
	}
	if o.memory.families, err = parseFamilies(*memFamilies); err != nil {
		return options{}, err
	}
	if o.memory.slHits < 1 || o.memory.slHits > 10 {
		return options{}, errors.New("-sl-hits must be between 1 and 10 (the sliding-log keys' limit)")
	}
	if o.warmup < 0 {
		return options{}, errors.New("-warmup must not be negative")
	}
	if o.failover.kills < 0 || o.failover.clientsPerNode < 1 || o.failover.cpuHogs < 0 || o.failover.quiet <= 0 {
		return options{}, errors.New("-kills and -cpu-hogs must not be negative, -failover-clients and -quiet must be positive")
	}
	if o.restart.rounds < 1 || o.restart.downFor < 0 {
		return options{}, errors.New("-restarts must be positive and -restart-down not negative")
	}
	if o.seconds <= 0 || o.rounds < 1 || o.memory.keys < 1 || o.memory.churnRate < 1 || o.memory.churnFor <= 0 {
		return options{}, errors.New("-seconds, -rounds, -keys, -churn and -churn-rate must be positive")
	}
	return o, nil
}

func parseModes(s string) ([]string, error) {
	var modes []string
	for _, m := range strings.Split(s, ",") {
		switch m = strings.TrimSpace(m); {
		case m == "pgo":
			if strings.TrimSpace(s) != "pgo" {
				return nil, errors.New("-mode pgo runs alone: it profiles the server instead of measuring it")
			}
			return []string{"pgo"}, nil
		case m == "all":
			return allModes, nil
		case slices.Contains(allModes, m) || m == failoverMode || m == restartMode || m == slowDiskMode || m == groupsMode:
			if !slices.Contains(modes, m) {
				modes = append(modes, m)
			}
		default:
			return nil, fmt.Errorf("unknown -mode %q (want compare, limiters, scripts, libraries, latency, datatypes, memory, cluster, all, failover, restart, slowdisk or groups)", m)
		}
	}
	return modes, nil
}

func parseServers(s string) ([]serverKind, error) {
	want := make(map[serverKind]bool)
	for _, name := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "all":
			want[kindRedcell], want[kindRedisLua], want[kindRedisLuaFsync] = true, true, true
		case "redcell":
			want[kindRedcell] = true
		case "redis":
			want[kindRedisLua], want[kindRedisLuaFsync] = true, true
		case "redis-lua":
			want[kindRedisLua] = true
		case "redis-lua-fsync":
			want[kindRedisLuaFsync] = true
		default:
			return nil, fmt.Errorf("unknown server %q in -servers", name)
		}
	}
	var kinds []serverKind
	for _, k := range allServerKinds { // fixed order: alternation order
		if want[k] {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// run is the whole tool: servers up, modes in order, results out, and every
// process stopped and temp dir removed on the way out (also when ctx is
// cancelled by Ctrl-C, which kills a running redis-benchmark).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	repoRoot, err := findRepoRoot(ctx)
	if err != nil {
		return err
	}
	if opts.resultsDir == "" {
		opts.resultsDir = filepath.Join(repoRoot, "bench", "results")
	}
	f, err := newFleet(repoRoot, opts.dataParent)
	if err != nil {
		return err
	}
	defer func() {
		if closeErr := f.closeAll(); closeErr != nil {
			err = errors.Join(err, closeErr)
		}
	}()
	if opts.baseline != "" {
		if err := f.resolveBaseline(ctx, opts.baseline); err != nil {
			return err
		}
	}
	for _, v := range opts.variants {
		f.addRedcell(v.kind(), redcellSpec{flags: v.flags})
	}
	if slices.Equal(opts.modes, []string{"pgo"}) {
		out := opts.pgoOut
		if out == "" {
			out = filepath.Join(repoRoot, "cmd", "redcell", "default.pgo")
		}
		if err := runPGOMode(ctx, f, int(math.Ceil(opts.seconds)), out, stdout); err != nil {
			return fmt.Errorf("pgo: %w", err)
		}
		fmt.Fprintf(stdout, "profile: %s\n", out)
		return nil
	}

	report := &resultsReport{
		info:    collectMachineInfo(ctx, repoRoot, f.root),
		command: "go run ./bench" + shellJoin(args),
		quick:   opts.quick,
		seconds: opts.seconds,
		warmup:  opts.warmup,
	}
	if len(opts.variants) > 0 {
		report.variants = variantsNote(opts.variants)
	}
	variantKinds := make([]serverKind, len(opts.variants))
	for i, v := range opts.variants {
		variantKinds[i] = v.kind()
	}
	fmt.Fprintf(stdout, "machine: %d CPUs, %s; %s; %s; redcell %s; data dirs on %s; load average %s\n",
		report.info.CPUs, report.info.CPUModel, report.info.GoVersion, report.info.RedisServer, report.info.Commit, report.info.DataFS, report.info.LoadStart)
	fmt.Fprintf(stdout, "fsync where the data dirs are: %s\n", report.info.Fsync)
	fmt.Fprintf(stdout, "CPU idle: %s\n", report.info.CPUIdle)
	if report.info.DataFS == "tmpfs" {
		fmt.Fprintln(stderr, "bench: WARNING: data dirs are on tmpfs, fsync is free there; use -tmp on a real disk for durable numbers")
	}

	var throughput []*server // shared by compare, limiters and latency
	startThroughputServers := func() error {
		if throughput != nil {
			return nil
		}
		for _, k := range opts.servers {
			s, err := f.start(ctx, k)
			if err != nil {
				return err
			}
			if err := checkFamilies(ctx, s, "bench:check", nativeFamilies); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "started %s pid %d on %s\n", s.kind, s.pid(), s.addr())
			throughput = append(throughput, s)
		}
		return nil
	}
	runner := benchmarkRunner{seconds: opts.seconds, warmup: opts.warmup, probeFloor: 20000}
	if opts.quick {
		runner.probeFloor = 5000
	}

	// writeResults replaces bench/results/<mode>.md as soon as the mode is
	// done, so an interrupted run keeps the modes it finished.
	// With -md every mode's section goes to that one file instead, rewritten
	// with the sections so far after each mode.
	var sections []string
	writeResults := func(mode, title, md string) error {
		if f.redcellBin != "" {
			report.build = buildNote(f.redcellBin)
		}
		if f.baselineBin != "" {
			report.baseline = fmt.Sprintf("%s (-baseline %s), %s", f.baseline[:min(len(f.baseline), 7)], opts.baseline, buildNote(f.baselineBin))
		}
		if f.slowDiskBin != "" {
			report.slowDiskBuild = buildNote(f.slowDiskBin) + ", -tags " + slowDiskTag
		}
		var path string
		var err error
		if opts.mdPath != "" {
			sections = append(sections, fmt.Sprintf("## %s\n\n%s", title, md))
			path, err = opts.mdPath, report.writeFile(opts.mdPath, strings.Join(sections, "\n"))
		} else {
			path, err = report.write(opts.resultsDir, mode, title, md)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nresults: %s\n", path)
		return nil
	}
	// allRows are every mode's rows, for the regression guard of the whole
	// run at the end.
	var allRows []summaryRow
	// summarise appends the variants' table and the regression guard to a
	// mode's markdown (and prints them) and keeps its rows.
	summarise := func(md string, rows []summaryRow) string {
		allRows = append(allRows, rows...)
		return withRegressions(stdout, withVariants(stdout, md, rows, variantKinds), rows)
	}
	for _, mode := range opts.modes {
		switch mode {
		case "compare", "limiters", "scripts", "latency":
			if err := startThroughputServers(); err != nil {
				return err
			}
			works, title := compareWorkloads, "Comparison"
			switch mode {
			case "limiters":
				works, title = limiterWorkloads, "Limiters: TB.TAKE and SL.HIT against their Lua scripts"
			case "scripts":
				works, title = scriptWorkloads, "Scripts: go-redis/redis_rate's GCRA script by EVALSHA on every server"
				for _, s := range throughput {
					if err := checkFamilies(ctx, s, "bench:check", []family{familyRR}); err != nil {
						return err
					}
				}
			case "latency":
				works, title = latencyWorkloads, "Latency: one client, no pipelining"
			}
			fmt.Fprintf(stdout, "\n== %s (%d rounds, ~%.0f s per run after %.1f s of warm-up)\n", title, opts.rounds, opts.seconds, opts.warmup)
			ms, err := runAlternating(ctx, runner, throughput, works, opts.rounds, stdout)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout)
			printMeasurements(stdout, ms)
			md := measurementsMarkdown(ms)
			if st := stagesMarkdown(ms); st != "" {
				md += "\n" + st
			}
			md = summarise(withBaseline(stdout, md, ms), summaryOfMeasurements(mode, ms))
			switch mode {
			case "limiters":
				md = "Load: " + scriptsNote(works) + ". Each ratio divides by the same command's script on Redis-Lua.\n\n" + md
			case "scripts":
				md = scriptsModeNote + md
			}
			if err := writeResults(mode, title, md); err != nil {
				return err
			}
		case "libraries":
			if err := startThroughputServers(); err != nil {
				return err
			}
			title := "Libraries: the Go rate-limit libraries' scripts, called by 20 concurrent callers"
			fmt.Fprintf(stdout, "\n== %s (%d rounds, ~%.0f s per run after %.1f s of warm-up)\n", title, opts.rounds, opts.seconds, opts.warmup)
			rows, err := runLibraries(ctx, throughput, opts.rounds, opts.seconds, opts.warmup, stdout)
			if err != nil {
				return err
			}
			md := librariesMarkdown(rows)
			fmt.Fprintf(stdout, "\n%s", md)
			md = summarise(md, summaryOfLibraries(rows))
			if err := writeResults(mode, title, md); err != nil {
				return err
			}
		case "datatypes":
			if err := startThroughputServers(); err != nil {
				return err
			}
			title := "Data types: the commands rate limiters send, against Redis running them natively"
			fmt.Fprintf(stdout, "\n== %s (%d rounds, ~%.0f s per run after %.1f s of warm-up)\n", title, opts.rounds, opts.seconds, opts.warmup)
			dr := dtRunner{seconds: opts.seconds, warmup: opts.warmup, bench: runner, progress: stdout}
			rows, err := runDatatypesThroughput(ctx, dr, throughput, opts.rounds)
			if err != nil {
				return err
			}
			md := datatypesMarkdown(rows)
			fmt.Fprintf(stdout, "\n%s", md)
			// The memory rows start a fresh server each: free the
			// throughput servers' memory and CPU first.
			for _, s := range throughput {
				if err := f.stop(s); err != nil {
					return err
				}
			}
			throughput = nil
			fmt.Fprintf(stdout, "\n== Data types, memory: %d keys per row\n", opts.memory.keys)
			mem, err := runDatatypesMemory(ctx, f, opts.servers, opts.memory.keys, opts.memory.conns, stdout)
			if err != nil {
				return err
			}
			memMD := datatypesMemoryMarkdown(mem, opts.memory.keys, opts.memory.conns)
			fmt.Fprintf(stdout, "\n%s", memMD)
			if err := writeResults(mode, title, summarise(md+"\n"+memMD, summaryOfDatatypes(rows, mem))); err != nil {
				return err
			}
		case "memory":
			// Free the throughput servers' memory and CPU first.
			for _, s := range throughput {
				if err := f.stop(s); err != nil {
					return err
				}
			}
			throughput = nil
			fmt.Fprintf(stdout, "\n== Memory: %d keys of each of %d families, then %s of churn at %d keys/s\n", opts.memory.keys, len(opts.memory.families), opts.memory.churnFor, opts.memory.churnRate)
			rs, err := runMemory(ctx, f, opts.servers, opts.memory, stdout)
			if err != nil {
				return err
			}
			md := memoryMarkdown(rs, opts.memory)
			fmt.Fprintf(stdout, "\n%s", md)
			if err := writeResults(mode, "Memory", summarise(md, summaryOfMemory(rs))); err != nil {
				return err
			}
		case "cluster":
			// The single-node servers would only sit in the cluster's way.
			for _, s := range throughput {
				if err := f.stop(s); err != nil {
					return err
				}
			}
			throughput = nil
			fmt.Fprintf(stdout, "\n== Cluster: %d local Redcell nodes against Redis-Lua (%d rounds, ~%.0f s per run after %.1f s of warm-up)\n", clusterSize, opts.rounds, opts.seconds, opts.warmup)
			md, ms, err := runClusterMode(ctx, f, opts.servers, runner, opts.rounds, report.info.DataFS, stdout)
			if err != nil {
				return err
			}
			if len(opts.variants) > 0 {
				note := "-variants do not run in the cluster mode: its rows are this commit's cluster with default flags (and the baseline's, with -baseline).\n"
				fmt.Fprintf(stdout, "\n%s", note)
				md += "\n*" + strings.TrimSuffix(note, "\n") + "*\n"
			}
			md = summarise(md, summaryOfMeasurements(mode, ms))
			if err := writeResults(mode, fmt.Sprintf("Cluster: %d local nodes", clusterSize), md); err != nil {
				return err
			}
		case slowDiskMode:
			for _, s := range throughput {
				if err := f.stop(s); err != nil {
					return err
				}
			}
			throughput = nil
			title := "Slow disk: Redcell with every WAL sync made longer"
			fmt.Fprintf(stdout, "\n== %s (%d rounds, ~%.0f s per run after %.1f s of warm-up)\n", title, opts.rounds, opts.seconds, opts.warmup)
			md, rows, err := runSlowDiskMode(ctx, f, opts.servers, opts.variants, opts.slowDisk, runner, opts.rounds, stdout)
			if err != nil {
				return err
			}
			md = summarise(md, rows)
			if err := writeResults(mode, title, md); err != nil {
				return err
			}
		case restartMode:
			for _, s := range throughput {
				if err := f.stop(s); err != nil {
					return err
				}
			}
			throughput = nil
			fmt.Fprintf(stdout, "\n== Restart: SIGKILL and restart of a lone node, a follower and a leader, small and large logs\n")
			md, err := runRestartMode(ctx, f, opts.restart, stdout)
			if err != nil {
				return err
			}
			if err := writeResults(mode, "Restart: time to serve after SIGKILL", md); err != nil {
				return err
			}
		case groupsMode:
			for _, s := range throughput {
				if err := f.stop(s); err != nil {
					return err
				}
			}
			throughput = nil
			fmt.Fprintf(stdout, "\n== Groups: two %d-node clusters, --groups 1 and 3, quotas %v cores per node (0: none)\n", clusterSize, opts.groupsQuotas)
			md, err := runGroupsMode(ctx, f, runner, opts.rounds, opts.groupsQuotas, stdout)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "\n%s", md)
			if err := writeResults(mode, fmt.Sprintf("Groups: %d local nodes, one group against three", clusterSize), md); err != nil {
				return err
			}
		case failoverMode:
			for _, s := range throughput {
				if err := f.stop(s); err != nil {
					return err
				}
			}
			throughput = nil
			fmt.Fprintf(stdout, "\n== Failover: SIGKILL of a %d-node cluster's leader, %d times\n", clusterSize, opts.failover.kills)
			md, err := runFailoverMode(ctx, f, opts.failover, stdout)
			if err != nil {
				return err
			}
			if err := writeResults(mode, fmt.Sprintf("Failover: %d local nodes, leader killed %d times", clusterSize, opts.failover.kills), md); err != nil {
				return err
			}
		}
	}
	// The guard once more, every mode together: the table release notes
	// quote. With -md it is the file's last section too.
	if t := regressionsMarkdown(allRows); t != "" {
		title := regressionsTitle + ", all modes (this commit against Redcell-baseline)"
		fmt.Fprintf(stdout, "\n== %s\n%s", title, t)
		if opts.mdPath != "" && len(opts.modes) > 1 {
			sections = append(sections, fmt.Sprintf("## %s\n\n%s", title, t))
			if err := report.writeFile(opts.mdPath, strings.Join(sections, "\n")); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkThrottle makes one decision on a fresh key and checks the reply, so a
// server that answers errors (which redis-benchmark counts as requests)
// is caught before it is measured.
func checkThrottle(ctx context.Context, s *server) error {
	return checkThrottleKey(ctx, s, "bench:check")
}

// checkThrottleKey is checkThrottle on the given fresh key (the nodes of a
// cluster share one keyspace, so each needs its own).
func checkThrottleKey(ctx context.Context, s *server, key string) error {
	return checkFamilies(ctx, s, key, []family{familyCL})
}

// checkFamilies makes one decision of each family on a fresh key (key plus
// the family's name) with the family's load arguments and checks the reply
// a fresh key gets.
func checkFamilies(ctx context.Context, s *server, key string, fs []family) error {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return err
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(5 * time.Second))
	for _, f := range fs {
		spec := families[f]
		k := key
		if f != familyCL {
			k += ":" + string(f)
		}
		if spec.scripted && s.shas[f] == "" {
			return fmt.Errorf("%s: %s: the server did not load the script", s.label(), spec.command)
		}
		v, err := c.do(s.limiterCommand(f, k, spec.args...)...)
		if err != nil {
			return fmt.Errorf("%s: check %s decision: %w", s.label(), spec.command, err)
		}
		if spec.scripted {
			if err := checkRedisRate(v); err != nil {
				return fmt.Errorf("%s: check %s decision: %w", s.label(), spec.command, err)
			}
			continue
		}
		got, err := throttleReply(v)
		if err != nil {
			return fmt.Errorf("%s: check %s decision: %w", s.label(), spec.command, err)
		}
		if got != spec.fresh {
			return fmt.Errorf("%s: check %s decision answered %v, want %v", s.label(), spec.command, got, spec.fresh)
		}
	}
	return nil
}

// findRepoRoot is the directory of the main module's go.mod.
func findRepoRoot(ctx context.Context) (string, error) {
	gomod := commandOutput(ctx, ".", "go", "env", "GOMOD")
	if gomod == "unknown" || gomod == "" || gomod == os.DevNull {
		return "", errors.New("run bench from inside the redcell module (go env GOMOD is empty)")
	}
	return filepath.Dir(gomod), nil
}

// shellJoin quotes args for a copy-pasteable command line.
func shellJoin(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteByte(' ')
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:") == "" {
			b.WriteString(a)
		} else {
			b.WriteString(strconv.Quote(a))
		}
	}
	return b.String()
}
