package main

// The pgo mode writes cmd/redcell/default.pgo: the CPU profile that Go's
// compiler reads to optimise the server (profile-guided optimisation: it
// inlines the calls that are hot in the profile, and devirtualises the
// interface calls whose concrete type the profile shows). `go build` and
// `go run` of ./cmd/redcell use that file on their own (-pgo=auto), so
// every way of starting the server, the system tests and the bench all get
// the same optimised binary; nothing else in the repository is built with it.
//
// The profile must come from the loads the server is for, or the compiler
// optimises the wrong paths. This mode takes it from a fresh node and a
// fresh 3-node cluster, each under the loads the bench measures, and merges
// the profiles (`go tool pprof -proto`). The binary it profiles is built with
// -pgo=off, so that the profile does not feed on the optimisation of an
// earlier one. Rerun it when the hot paths change; a profile a little behind
// the code still helps (the compiler matches functions by name and line
// offset, and ignores what no longer matches).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// pgoLoad is one load a profile is taken under: on a lone node, or on a
// 3-node cluster with the clients on the leader or spread over every node.
type pgoLoad struct {
	name    string // the profile file's name, unique
	work    workload
	cluster bool
	spread  bool // cluster: clients spread over every node, not all on the leader
}

// pgoLoads are the bench's own scenarios (compare, latency, limiters,
// cluster), each profiled for the same time. In the cluster loads the
// leader and a follower are both profiled: a follower's work (receiving,
// storing and applying entries, and forwarding its own clients' commands
// when they are spread) is about a quarter of the cluster's CPU.
var pgoLoads = []pgoLoad{
	{name: "cl-c50-P16", work: workload{clients: 50, pipeline: 16, keyspace: 100000}},
	{name: "cl-c50-P1", work: workload{clients: 50, pipeline: 1, keyspace: 100000}},
	{name: "cl-c200-P1", work: workload{clients: 200, pipeline: 1, keyspace: 100000}},
	{name: "cl-hot-c50-P16", work: workload{clients: 50, pipeline: 16}},
	{name: "cl-c1-P1", work: workload{clients: 1, pipeline: 1, keyspace: 100000}},
	{name: "tb-c50-P16", work: workload{family: familyTB, clients: 50, pipeline: 16, keyspace: 100000}},
	{name: "sl-c50-P16", work: workload{family: familySL, clients: 50, pipeline: 16, keyspace: 100000}},
	{name: "rr-c50-P16", work: workload{family: familyRR, clients: 50, pipeline: 16, keyspace: 100000}},
	{name: "cluster-leader-c50-P16", work: workload{clients: 50, pipeline: 16, keyspace: 100000}, cluster: true},
	{name: "cluster-spread-c50-P16", work: workload{clients: 50, pipeline: 16, keyspace: 100000}, cluster: true, spread: true},
}

// pgoWarmup is how long each load runs before its profile starts: a fresh
// node's first second is its warm-up (new WALs, an empty key space).
const pgoWarmup = 2 * time.Second

// runPGOMode profiles every pgoLoad for seconds each and writes the merged
// profile to outPath. Every server it starts belongs to f.
func runPGOMode(ctx context.Context, f *fleet, seconds int, outPath string, progress io.Writer) error {
	f.buildFlags = []string{"-pgo=off"}
	dir, err := os.MkdirTemp(f.root, "pgo-")
	if err != nil {
		return fmt.Errorf("profile dir: %w", err)
	}
	// withPprof is a node's --pprof argument on a free port, and the port.
	withPprof := func() ([]string, int, error) {
		port, err := freePort()
		if err != nil {
			return nil, 0, err
		}
		return []string{"--pprof", "127.0.0.1:" + strconv.Itoa(port)}, port, nil
	}

	var profiles []string
	args, port, err := withPprof()
	if err != nil {
		return err
	}
	node, err := f.startNode(ctx, kindRedcell, "pgo", args)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "started %s pid %d on %s (pprof on port %d)\n", node.label(), node.pid(), node.addr(), port)
	for _, l := range pgoLoads {
		if l.cluster {
			continue
		}
		file := filepath.Join(dir, l.name+".pprof")
		if err := profileUnderLoad(ctx, []*server{node}, l.work, seconds, []profileGrab{{port, file}}); err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		fmt.Fprintf(progress, "profiled %s (%s)\n", l.name, l.work)
		profiles = append(profiles, file)
	}
	if err := f.stop(node); err != nil {
		return err
	}

	ports := make(map[string]int) // cluster node name → its pprof port
	nodeArgs := func(name string) []string {
		args, port, err := withPprof()
		if err != nil { // no free port: the node starts without pprof, and the check below says so
			return nil
		}
		ports[name] = port
		return args
	}
	c, err := startCluster(ctx, f, kindRedcell, clusterSize, nodeArgs, progress)
	if err != nil {
		return err
	}
	for _, s := range c.nodes {
		if ports[s.name] == 0 {
			return fmt.Errorf("cluster node %s has no pprof port", s.name)
		}
	}
	leader, follower := c.leader, c.followers[0]
	for _, l := range pgoLoads {
		if !l.cluster {
			continue
		}
		nodes := []*server{leader}
		if l.spread {
			nodes = c.nodes
		}
		grabs := []profileGrab{
			{ports[leader.name], filepath.Join(dir, l.name+"-leader.pprof")},
			{ports[follower.name], filepath.Join(dir, l.name+"-follower.pprof")},
		}
		if err := profileUnderLoad(ctx, nodes, l.work, seconds, grabs); err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		fmt.Fprintf(progress, "profiled %s (%s, leader and follower)\n", l.name, l.work)
		profiles = append(profiles, grabs[0].file, grabs[1].file)
	}
	for _, s := range c.nodes {
		if err := f.stop(s); err != nil {
			return err
		}
	}
	return mergeProfiles(ctx, f.repoRoot, profiles, outPath)
}

// profileGrab is one CPU profile to take: from the pprof server on port
// (127.0.0.1), into file.
type profileGrab struct {
	port int
	file string
}

// profileUnderLoad runs w against nodes (its clients split over them, one
// redis-benchmark each, with no end of their own), lets it warm up, then
// takes every grab's CPU profile of seconds at once, and stops the load. A load generator that
// ends before the profiles are taken is an error: the profile would be of an
// idle server.
func profileUnderLoad(ctx context.Context, nodes []*server, w workload, seconds int, grabs []profileGrab) error {
	clients, err := splitClients(w.clients, len(nodes))
	if err != nil {
		return err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	type loadGen struct {
		cmd    *exec.Cmd
		stderr bytes.Buffer
		done   chan struct{}
		err    error
	}
	gens := make([]*loadGen, len(nodes))
	ended := make(chan *loadGen, len(nodes))
	for i, s := range nodes {
		g := &loadGen{done: make(chan struct{})}
		part := workload{family: w.family, clients: clients[i], pipeline: w.pipeline, keyspace: w.keyspace}
		g.cmd = exec.CommandContext(loadCtx, "redis-benchmark", redisBenchmarkArgs(s, part, math.MaxInt32)...)
		g.cmd.Stderr = &g.stderr
		if err := g.cmd.Start(); err != nil {
			return fmt.Errorf("start redis-benchmark: %w", err)
		}
		gens[i] = g
		go func() {
			g.err = g.cmd.Wait()
			close(g.done)
			ended <- g
		}()
	}
	defer func() {
		stopLoad()
		for _, g := range gens {
			if g != nil {
				<-g.done
			}
		}
	}()
	early := func(g *loadGen) error {
		return fmt.Errorf("redis-benchmark ended before the profile was taken: %v: %s", g.err, g.stderr.String())
	}
	select {
	case <-time.After(pgoWarmup):
	case g := <-ended:
		return early(g)
	case <-ctx.Done():
		return ctx.Err()
	}
	errs := make(chan error, len(grabs))
	for _, g := range grabs {
		go func() { errs <- fetchCPUProfile(ctx, g.port, seconds, g.file) }()
	}
	var all []error
	for range grabs {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	select {
	case g := <-ended:
		all = append(all, early(g))
	default:
	}
	return errors.Join(all...)
}

// fetchCPUProfile takes a CPU profile of seconds from the server's
// /debug/pprof on port and writes it to file.
func fetchCPUProfile(ctx context.Context, port, seconds int, file string) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, seconds)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("profile from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		return fmt.Errorf("profile from %s: %s: %.200s", url, resp.Status, body)
	}
	return os.WriteFile(file, body, 0o644)
}

// mergeProfiles merges profiles into one with `go tool pprof -proto` and
// writes it to outPath (through a temporary file beside it, so that a
// failed merge leaves the old profile in place).
func mergeProfiles(ctx context.Context, repoRoot string, profiles []string, outPath string) error {
	if len(profiles) == 0 {
		return errors.New("no profiles to merge")
	}
	cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-proto"}, profiles...)...)
	cmd.Dir = repoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go tool pprof -proto: %w: %s", err, stderr.String())
	}
	if stdout.Len() == 0 {
		return fmt.Errorf("go tool pprof -proto wrote nothing: %s", stderr.String())
	}
	tmp := outPath + ".tmp"
	if err := os.WriteFile(tmp, stdout.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, outPath)
}
