package main

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// machineInfo describes where and with what a run happened, for the
// results file: numbers without it cannot be compared later.
type machineInfo struct {
	CPUs        int
	CPUModel    string
	Kernel      string
	GoVersion   string
	RedisServer string
	Commit      string
	DataFS      string     // filesystem type holding the data dirs (fsync cost depends on it)
	Fsync       fsyncSpeed // measured append+fsync and overwrite+fdatasync latency where the data dirs live
	Date        string
	LoadStart   string // 1/5/15-minute load averages when the run began
	// CPUIdle is how the kernel idles a CPU (cpuidle driver and governor,
	// and under haltpoll how long a guest polls before it halts): a lone
	// client's round trip includes waking a halted vCPU, ~40 µs on the VMs
	// measured here with guest_halt_poll_ns 0 (server/DESIGN.md, "Busy
	// polling for the next request").
	CPUIdle string
}

// collectMachineInfo gathers machineInfo; a fact it cannot get reads "unknown".
func collectMachineInfo(ctx context.Context, repoRoot, dataDir string) machineInfo {
	m := machineInfo{
		CPUs:        runtime.NumCPU(),
		CPUModel:    cpuModel(),
		Kernel:      strings.TrimSpace(readFileOr("/proc/sys/kernel/osrelease", "unknown")),
		GoVersion:   commandOutput(ctx, repoRoot, "go", "version"),
		RedisServer: commandOutput(ctx, repoRoot, "redis-server", "--version"),
		Commit:      commandOutput(ctx, repoRoot, "git", "rev-parse", "--short", "HEAD"),
		DataFS:      filesystemType(dataDir),
		Date:        time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		LoadStart:   loadAverage(),
		CPUIdle:     cpuIdle(),
	}
	if fs, err := measureFsync(dataDir); err == nil {
		m.Fsync = fs
	}
	return m
}

// buildNote says how the binary at bin was compiled: with a profile
// (profile-guided optimisation, cmd/redcell/default.pgo) and which one, by
// the first bytes of its SHA-256, or without. Figures from binaries built
// with different profiles are not the same code's.
func buildNote(bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, st := range bi.Settings {
		if st.Key != "-pgo" {
			continue
		}
		b, err := os.ReadFile(st.Value)
		if err != nil {
			return "profile-guided, " + filepath.Base(st.Value) + " (unreadable: " + err.Error() + ")"
		}
		sum := sha256.Sum256(b)
		return fmt.Sprintf("profile-guided, %s (sha256 %x…)", filepath.Base(st.Value), sum[:6])
	}
	return "without a profile (-pgo=off)"
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	for _, line := range strings.Split(readFileOr("/proc/cpuinfo", ""), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func readFileOr(path, fallback string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fallback
	}
	return string(b)
}

// commandOutput runs a read-only command and returns its trimmed output.
func commandOutput(ctx context.Context, dir, name string, args ...string) string {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// filesystemType names the filesystem holding path. tmpfs matters: there
// fsync costs nothing and the durable rows would be meaningless.
func filesystemType(path string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return "unknown"
	}
	switch st.Type {
	case 0x01021994:
		return "tmpfs"
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794C7630:
		return "overlayfs"
	}
	return fmt.Sprintf("0x%x", st.Type)
}

// cpuIdle describes the idle driver from sysfs: "haltpoll/haltpoll,
// guest_halt_poll_ns 0", "intel_idle/menu"; "unknown" without one.
func cpuIdle() string {
	const dir = "/sys/devices/system/cpu/cpuidle/"
	driver := strings.TrimSpace(readFileOr(dir+"current_driver", ""))
	if driver == "" {
		return "unknown"
	}
	s := driver + "/" + strings.TrimSpace(readFileOr(dir+"current_governor", readFileOr(dir+"current_governor_ro", "unknown")))
	if ns := strings.TrimSpace(readFileOr("/sys/module/haltpoll/parameters/guest_halt_poll_ns", "")); ns != "" {
		s += ", guest_halt_poll_ns " + ns
	}
	return s
}

// loadAverage is the 1/5/15-minute load averages from /proc/loadavg. Other
// work on the machine is the main source of noise: a load above the CPU
// count during a run means the servers competed for CPU.
func loadAverage() string {
	f := strings.Fields(readFileOr("/proc/loadavg", ""))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
