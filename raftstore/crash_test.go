package raftstore

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
)

// The kill tests re-execute this test binary as a child that writes to a
// store and prints every acknowledged write; the parent SIGKILLs it mid-run
// and checks that everything acknowledged survived. SIGKILL tests the
// process side (nothing acknowledged is still in a user-space buffer, WAL
// replay copes with a torn tail); the crashable-FS tests below test the
// machine side (nothing acknowledged depends on data that was never
// fsynced).
const (
	helperEnvMode = "RAFTSTORE_HELPER_MODE"
	helperEnvDir  = "RAFTSTORE_HELPER_DIR"
	killAfterAcks = 300
	// helperMaxWrites stops a child whose parent vanished without killing it
	// (a broken stdout pipe usually kills it first).
	helperMaxWrites = 1_000_000
)

// TestHelperProcess is not a test: it is the child of the kill tests, and
// skips itself unless started by one.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnvMode)
	if mode == "" {
		t.Skip("child process of the kill tests")
	}
	s, err := Open(os.Getenv(helperEnvDir), Options{Logger: quietLogger})
	if err != nil {
		fmt.Fprintf(os.Stderr, "open: %v\n", err)
		os.Exit(2)
	}
	ack := func(n uint64) {
		// Unbuffered: the ack reaches the pipe before the next write starts.
		if _, err := fmt.Fprintf(os.Stdout, "ack %d\n", n); err != nil {
			os.Exit(3)
		}
	}
	switch mode {
	case "logs":
		next := uint64(1)
		for next < helperMaxWrites {
			// Batches of 1 to 4 entries, like raft's appends.
			batch := testEntries(next, next+next%4)
			if err := s.StoreLogs(batch); err != nil {
				fmt.Fprintf(os.Stderr, "StoreLogs: %v\n", err)
				os.Exit(2)
			}
			next += uint64(len(batch))
			ack(next - 1)
		}
	case "stable":
		for term := uint64(1); term < helperMaxWrites; term++ {
			if err := s.SetUint64([]byte("CurrentTerm"), term); err != nil {
				fmt.Fprintf(os.Stderr, "SetUint64: %v\n", err)
				os.Exit(2)
			}
			if err := s.Set([]byte("LastVoteCand"), []byte(fmt.Sprintf("cand-%d", term))); err != nil {
				fmt.Fprintf(os.Stderr, "Set: %v\n", err)
				os.Exit(2)
			}
			ack(term)
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		os.Exit(2)
	}
	os.Exit(0)
}

// runAndKill starts the helper in mode on dir, reads killAfterAcks acks,
// SIGKILLs it by PID and returns the last ack.
func runAndKill(t *testing.T, mode, dir string) uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnvMode+"="+mode, helperEnvDir+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// If the test fails before the kill, do not leave the child blocked on a
	// full pipe (runs before t.TempDir's removal: cleanups are LIFO).
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	var lastAck uint64
	acks := 0
	sc := bufio.NewScanner(stdout)
	for acks < killAfterAcks && sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "ack ")
		if !ok {
			continue // test framework chatter
		}
		n, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			t.Fatalf("bad ack line %q", line)
		}
		if n <= lastAck {
			t.Fatalf("ack %d after ack %d", n, lastAck)
		}
		lastAck = n
		acks++
	}
	if acks < killAfterAcks {
		_ = cmd.Process.Kill() // before reading stderr, which the child may still be writing
		_ = cmd.Wait()
		t.Fatalf("child stopped after %d acks: %v; stderr: %s", acks, sc.Err(), stderr.String())
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", cmd.Process.Pid, err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v; stderr: %s", err, stderr.String())
	}
	return lastAck
}

func TestKillAndReopen_AcknowledgedEntriesSurvive(t *testing.T) {
	dir := t.TempDir()
	lastAck := runAndKill(t, "logs", dir)

	s := openStore(t, dir, Options{})
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 1 || last < lastAck {
		t.Fatalf("after kill: bounds [%d, %d], want [1, >= %d]", first, last, lastAck)
	}
	// Every entry up to the last one present is intact, acknowledged or not:
	// a batch is all or nothing, so there are no holes and no torn entries.
	for i := uint64(1); i <= last; i++ {
		checkEntry(t, s, i)
	}
	t.Logf("killed after ack %d; %d entries on disk", lastAck, last)

	// The store keeps working where the child left off.
	if err := s.StoreLogs(testEntries(last+1, last+3)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, last+3)
}

func TestKillAndReopen_AcknowledgedStableWritesSurvive(t *testing.T) {
	dir := t.TempDir()
	lastAck := runAndKill(t, "stable", dir)

	s := openStore(t, dir, Options{})
	term, err := s.GetUint64([]byte("CurrentTerm"))
	if err != nil || term < lastAck {
		t.Fatalf("after kill: CurrentTerm = %d, %v; want >= %d", term, err, lastAck)
	}
	cand, err := s.Get([]byte("LastVoteCand"))
	if err != nil {
		t.Fatal(err)
	}
	// The vote was written after the term, so it names this term or the one
	// before (if the kill fell between the two writes).
	if c := string(cand); c != fmt.Sprintf("cand-%d", term) && c != fmt.Sprintf("cand-%d", term-1) {
		t.Fatalf("after kill: LastVoteCand = %q with CurrentTerm %d", c, term)
	}
}

// crashClone opens a store on a crashable in-memory FS, runs write, then
// takes the state the disk would be in had the machine lost power right
// then (only fsynced data survives), and returns the store reopened on it.
func crashClone(t *testing.T, noSync bool, write func(s *Store)) *Store {
	t.Helper()
	fs := vfs.NewCrashableMem()
	s, err := Open("/db", Options{NoSync: noSync, Logger: quietLogger, fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	write(s)
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := Open("/db", Options{Logger: quietLogger, fs: crashed})
	if err != nil {
		t.Fatalf("open after simulated power loss: %v", err)
	}
	t.Cleanup(func() { _ = after.Close() })
	return after
}

// Each case ends with the operation under test, so that no later fsync of
// something else can make its data durable by accident (a synced Pebble
// commit persists every earlier write too).
func TestPowerLoss_SyncedWritesSurvive(t *testing.T) {
	snapData := snapshotData(snapshotChunkSize*2+3, 11)
	var snapID string
	cases := []struct {
		name  string
		write func(t *testing.T, s *Store)
		check func(t *testing.T, s *Store)
	}{
		{"StoreLogs", func(t *testing.T, s *Store) {
			for i := uint64(1); i <= 200; i += 5 {
				if err := s.StoreLogs(testEntries(i, i+4)); err != nil {
					t.Fatal(err)
				}
			}
		}, func(t *testing.T, s *Store) {
			checkBounds(t, s, 1, 200)
			for i := uint64(1); i <= 200; i++ {
				checkEntry(t, s, i)
			}
		}},
		{"StoreLogs across WAL rotations and flushes", func(t *testing.T, s *Store) {
			// 12 MiB through 4 MiB memtables: several new WAL files and
			// flushed sstables, each of which must be durable in turn.
			big := make([]byte, 256<<10)
			for i := uint64(1); i <= 48; i++ {
				big[0] = byte(i)
				if err := s.StoreLog(&raft.Log{Index: i, Term: 1, Data: big}); err != nil {
					t.Fatal(err)
				}
			}
			if m := s.db.Metrics(); m.Flush.Count < 1 {
				t.Fatalf("%d flushes: the case does not exercise WAL rotation", m.Flush.Count)
			}
		}, func(t *testing.T, s *Store) {
			checkBounds(t, s, 1, 48)
			for i := uint64(1); i <= 48; i++ {
				var l raft.Log
				if err := s.GetLog(i, &l); err != nil || len(l.Data) != 256<<10 || l.Data[0] != byte(i) {
					t.Fatalf("GetLog(%d) = %d bytes, %v", i, len(l.Data), err)
				}
			}
		}},
		{"StoreLog", func(t *testing.T, s *Store) {
			if err := s.StoreLog(testEntry(1)); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *Store) {
			checkBounds(t, s, 1, 1)
			checkEntry(t, s, 1)
		}},
		{"DeleteRange", func(t *testing.T, s *Store) {
			if err := s.StoreLogs(testEntries(1, 100)); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteRange(1, 50); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *Store) {
			checkBounds(t, s, 51, 100)
			if err := s.GetLog(50, new(raft.Log)); err != raft.ErrLogNotFound {
				t.Fatalf("a synced DeleteRange was undone: GetLog(50) err = %v", err)
			}
		}},
		{"SetUint64", func(t *testing.T, s *Store) {
			if err := s.SetUint64([]byte("CurrentTerm"), 9); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *Store) {
			if n, err := s.GetUint64([]byte("CurrentTerm")); err != nil || n != 9 {
				t.Fatalf("CurrentTerm = %d, %v; want 9", n, err)
			}
		}},
		{"Set", func(t *testing.T, s *Store) {
			if err := s.Set([]byte("LastVoteCand"), []byte("n3")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, s *Store) {
			if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "n3" {
				t.Fatalf("LastVoteCand = %q, %v; want n3", v, err)
			}
		}},
		{"snapshot Close", func(t *testing.T, s *Store) {
			snapID = writeSnapshot(t, s.SnapshotStore(2), 2, 150, snapData)
		}, func(t *testing.T, s *Store) {
			ss := s.SnapshotStore(2)
			if ids := listIDs(t, ss); !slicesEqual(ids, []string{snapID}) {
				t.Fatalf("snapshots = %v, want %s", ids, snapID)
			}
			if _, got, err := readSnapshot(t, ss, snapID); err != nil || !bytes.Equal(got, snapData) {
				t.Fatalf("snapshot: %d bytes, %v", len(got), err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := crashClone(t, false, func(s *Store) { c.write(t, s) })
			c.check(t, s)
		})
	}
}

// The control experiment: the same harness must notice when writes are not
// fsynced, or the test above proves nothing.
func TestPowerLoss_NoSyncLosesWrites(t *testing.T) {
	s := crashClone(t, true, func(s *Store) {
		if err := s.StoreLogs(testEntries(1, 50)); err != nil {
			t.Fatal(err)
		}
		if err := s.SetUint64([]byte("CurrentTerm"), 9); err != nil {
			t.Fatal(err)
		}
	})
	last, _ := s.LastIndex()
	if last == 50 {
		t.Fatal("unsynced entries survived the simulated power loss: the harness cannot detect a missing fsync")
	}
	if _, err := s.GetUint64([]byte("CurrentTerm")); err != ErrKeyNotFound {
		t.Fatalf("unsynced term survived the simulated power loss: err = %v", err)
	}
}

// A crash in the middle of writing a snapshot, after some chunks reached the
// disk: nothing is listed and the chunks are swept.
func TestPowerLoss_DuringSnapshotLeavesNoSnapshot(t *testing.T) {
	s := crashClone(t, false, func(s *Store) {
		sink, err := s.SnapshotStore(1).Create(1, 10, 1, testConfiguration, 9, nil)
		if err != nil {
			t.Fatal(err)
		}
		writeInPieces(t, sink, snapshotData(snapshotChunkSize*3, 12))
		// Make the chunks durable, as unrelated synced appends would.
		if err := s.StoreLog(testEntry(1)); err != nil {
			t.Fatal(err)
		}
	})
	if ids := listIDs(t, s.SnapshotStore(1)); len(ids) != 0 {
		t.Fatalf("List after a crash mid-snapshot = %v", ids)
	}
	if n := countKeys(t, s, s.snapChunkLower, s.snapChunkUpper); n != 0 {
		t.Fatalf("%d orphaned chunks survived Open", n)
	}
	checkEntry(t, s, 1)
}
