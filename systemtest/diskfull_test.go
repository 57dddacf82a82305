package systemtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountSmallDisk mounts a tmpfs of size bytes on a fresh directory and
// unmounts it when the test ends. It needs root: in CI (CI=true) anything
// less is a failure, elsewhere a skip.
func mountSmallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := "mounting a " + strconv.FormatInt(size>>20, 10) + " MiB tmpfs (needs root): " + err.Error() + ": " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillTo writes a filler file until the filesystem at dir has about
// leave bytes available.
func fillTo(t *testing.T, dir string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for n := avail - leave; n > 0; n -= int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), n)]); err != nil {
			t.Fatalf("filling %s: %v", dir, err)
		}
	}
	return path
}

// TestDiskFullRefusesWritesAndResumes: on a real 96 MiB filesystem filled
// below the node's reserve, every state-changing command is answered at once
// with MISCONF naming the disk (never a hang, never a crash), reads and PING
// keep working, INFO says so; when space returns, writes resume by
// themselves with every acknowledged decision in force; SIGTERM stops the
// node cleanly throughout.
func TestDiskFullRefusesWritesAndResumes(t *testing.T) {
	t.Parallel()
	const reserve = 32 << 20
	fs := mountSmallDisk(t, 96<<20)
	dataDir := filepath.Join(fs, "data")
	n := newNode("diskfull", dataDir, t.TempDir(), "--min-free-disk", strconv.Itoa(reserve))
	registerNodeCleanup(t, n, 0)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	c := mustDial(t, n.addr())
	origin := freshBase(t, c)
	// CL.THROTTLE k 99999 1 86400: 100,000 per day, far more than the
	// writes that can pass before the guard trips; the clock is frozen, so
	// nothing refills while the test runs.
	for j := int64(1); j <= 3; j++ {
		expectReply(t, c, wantInts(0, 100000, 100000-j, -1, 86400*j), "CL.THROTTLE", "k", "99999", "1", "86400")
	}

	filler := fillTo(t, fs, reserve/2)
	deadline := time.Now().Add(5 * time.Second)
	var last reply
	for {
		start := time.Now()
		r, err := c.do("CL.THROTTLE", "k", "99999", "1", "86400")
		if err != nil {
			t.Fatalf("CL.THROTTLE on a full disk: %v", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("a write on a full disk took %v to answer", took)
		}
		last = r
		if r.kind == '-' {
			break
		}
		// Admitted before the guard saw the disk: it counts.
		if time.Now().After(deadline) {
			t.Fatalf("writes still admitted 5 s after the disk went below the reserve: %v", r)
		}
	}
	if !strings.HasPrefix(last.str, "MISCONF Redcell cannot write its log: the disk of "+dataDir) {
		t.Fatalf("write on a full disk answered %q; want MISCONF naming %s", last.str, dataDir)
	}
	// Every kind of write is refused alike, at once; reads and PING work.
	for _, args := range [][]string{{"DEL", "k"}, {"TB.TAKE", "t", "5", "1", "1000"}, {"FLUSHALL"}} {
		r := mustDo(t, c, args...)
		if r.kind != '-' || !strings.HasPrefix(r.str, "MISCONF ") {
			t.Errorf("%q on a full disk answered %v; want MISCONF", args, r)
		}
	}
	expectReply(t, c, wantStatus("PONG"), "PING")
	peek := mustDo(t, c, "CL.PEEK", "k", "99999", "1", "86400", "0")
	if peek.kind != '*' || len(peek.elems) != 5 {
		t.Fatalf("CL.PEEK on a full disk answered %v", peek)
	}
	admitted := 100000 - peek.elems[2].num // remaining after everything acknowledged
	info := mustDo(t, c, "INFO", "persistence")
	if infoField(info.str, "log_disk_low") != "1" {
		t.Errorf("INFO persistence does not show the low disk:\n%s", info.str)
	}
	if log := n.logTail(1 << 16); strings.Count(log, "log disk below its reserve") != 1 {
		t.Errorf("the condition is not logged exactly once:\n%s", lastLines(log, 20))
	}

	// Space returns: writes resume by themselves, the state intact.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		r := mustDo(t, c, "CL.THROTTLE", "k", "99999", "1", "86400")
		if r.kind == '*' {
			admitted++
			if r.elems[0].num != 0 || r.elems[2].num != 100000-admitted {
				t.Fatalf("after space returned: remaining %d, want %d (every acknowledged decision in force)", r.elems[2].num, 100000-admitted)
			}
			break
		}
		if !strings.HasPrefix(r.str, "MISCONF ") || time.Now().After(deadline) {
			t.Fatalf("5 s after space returned: %v", r)
		}
	}

	// Full again, then SIGTERM: a clean stop, and after a restart every
	// acknowledged decision is still in force.
	fillTo(t, fs, reserve/2)
	c.close()
	n.mustStop(t)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	n.mustRestart(t)
	c = mustDial(t, n.addr())
	setClock(t, c, origin)
	expectReply(t, c, wantInts(0, 100000, 100000-admitted, -1, 86400*admitted), "CL.PEEK", "k", "99999", "1", "86400", "0")
	n.mustStop(t)
}

// TestClusterLeaderWithFullDiskHandsOver: the leader's data dir is on a
// real 96 MiB filesystem; filled below the reserve, it refuses writes with
// MISCONF and hands its leadership to a healthy node within seconds, after
// which writes through every node (the full one forwards) are decided again,
// no acknowledged decision lost; once space returns the replicas agree.
func TestClusterLeaderWithFullDiskHandsOver(t *testing.T) {
	t.Parallel()
	const reserve = 32 << 20
	fs := mountSmallDisk(t, 96<<20)
	c := startClusterWithDirs(t, 3, map[string]string{"n1": filepath.Join(fs, "n1")}, "--min-free-disk", strconv.Itoa(reserve))
	if leader := c.waitLeader(); c.nodes[leader].id != "n1" {
		if r, err := c.call(leader, "RAFT", "TRANSFER", "n1"); err != nil || r.isErr() {
			t.Fatalf("RAFT TRANSFER n1: %v %v", r, err)
		}
		c.waitLeader(0)
	}
	admitted := int64(0)
	throttle := func(i int) (reply, error) { return c.call(i, "CL.THROTTLE", "full", "99", "1", "86400") }
	for i := range 3 {
		r, err := throttle(i)
		if err != nil || r.kind != '*' {
			t.Fatalf("CL.THROTTLE via %s: %v %v", c.nodes[i].id, r, err)
		}
		admitted++
		if r.elems[2].num != 100-admitted {
			t.Fatalf("remaining %d after %d admitted", r.elems[2].num, admitted)
		}
	}

	filler := fillTo(t, fs, reserve/2)
	// The full leader answers MISCONF (or, once it has handed over,
	// forwards); within 10 s a healthy node leads and decides.
	newLeader := c.waitLeader(1, 2)
	c.waitFor(10*time.Second, "writes decided again through every node", func() (bool, string) {
		for i := range 3 {
			r, err := throttle(i)
			if err != nil {
				return false, err.Error()
			}
			if r.kind != '*' {
				if !strings.HasPrefix(r.str, "MISCONF ") && !isFailoverError(r.str) {
					t.Fatalf("write via %s during the hand-over: %v", c.nodes[i].id, r)
				}
				return false, c.nodes[i].id + ": " + r.str
			}
			admitted++
			if r.elems[2].num != 100-admitted {
				t.Fatalf("via %s: remaining %d after %d admitted: a decision was lost or doubled", c.nodes[i].id, r.elems[2].num, admitted)
			}
		}
		return true, ""
	})
	if got := c.nodes[newLeader].id; got == "n1" {
		t.Fatalf("the node with the full disk leads again")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.compareReplicas("after the disk had space again")
}
