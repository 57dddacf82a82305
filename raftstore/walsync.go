package raftstore

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Direct WAL syncs: the log's fsync without handing the thread to Go's
// scheduler, while the node is alone (the binary's default; off with
// --direct-wal-sync=false); see DESIGN.md, "Direct WAL syncs", for what it
// gains, what it risks and the measurements behind the default.
//
// Every append waits for one fdatasync of Pebble's WAL. Go makes that a
// blocking system call (syscall.Syscall): the P stays with the blocked
// thread until sysmon takes it away and wakes another thread to run it;
// when the sync returns, the thread finds its P gone, puts its goroutine on
// the global run queue and parks, and the goroutine that heads the whole
// entry's answer waits there behind every connection that became runnable
// during the sync. On a VM those handoffs, and that wait, cost more than
// the work of the requests the sync carries.
//
// A direct sync calls fdatasync with syscall.RawSyscall, which tells the
// scheduler nothing: the thread keeps its P and sleeps in the kernel. While
// it does, the runtime cannot preempt that thread or run the P's goroutines
// elsewhere (with GOMAXPROCS 1, none runs at all), and a garbage collection's
// stop-the-world waits for the sync to end. Hence its limits:
//
//   - A node with peers must not do it: its leader replicates entry N while
//     its disk takes N+1, and a follower applies while it syncs. The switch
//     (Store.SetDirectWALSync) is off after Open; package group turns it on
//     only while the node is the only server of its configuration. The
//     WAL is the database's, shared by every group's log: each group's
//     Store votes, and the database syncs directly only while every group
//     it has opened votes for it (every one of them alone).
//   - A disk that stalls would stall the node with it. A direct sync slower
//     than slowDirectSync turns direct syncs off for directSyncBackoff: a
//     disk that stalls costs one stall's pause, not one per append, and a
//     disk that is slow for good is synced the ordinary way.
//
// Only the WAL is synced directly: Pebble also syncs SSTables it writes in
// flushes and compactions (megabytes each, and not on the request path) and
// its MANIFEST; those keep the ordinary call. Durability is the same either
// way: the same system call on the same file descriptor, and its error, if
// any, goes back to Pebble, which treats it as fatal (Options.OnFatal).

// slowDirectSync is the sync time above which direct syncs are suspended.
const slowDirectSync = 20 * time.Millisecond

// directSyncBackoff is how long they stay suspended after a slow one.
const directSyncBackoff = 10 * time.Second

// walSync is the switch and the counters shared by a store's WAL files.
type walSync struct {
	enabled  atomic.Bool  // SetDirectWALSync: the node is alone
	offUntil atomic.Int64 // unix nanos: suspended after a slow sync until then; 0: not suspended
	direct   atomic.Uint64
	ordinary atomic.Uint64
	slow     atomic.Uint64 // direct syncs that took longer than slowDirectSync
	// syncNanos sums the time of every WAL sync, direct or ordinary: what
	// the disk itself costs an append, told apart from the rest of the
	// append's path (raft's goroutine, Pebble's commit pipeline) in INFO.
	syncNanos atomic.Uint64
	// prefilled and prefillFailed count new WALs zero-filled and the
	// zero-fills that failed (walprefill.go).
	prefilled, prefillFailed atomic.Uint64
	now                      func() time.Time
	onSlow                   func(took time.Duration) // reports a suspension (logging); may be nil
	onPrefillError           func(err error)          // reports a failed zero-fill (logging); may be nil
	observe                  func(took time.Duration) // Options.ObserveWALSync; may be nil
	afterSync                func(direct bool)        // Options.AfterWALSync; may be nil
	syncDirect               func(fd uintptr, full bool) error
}

func newWALSync() *walSync {
	return &walSync{now: time.Now, syncDirect: rawSync}
}

// useDirect reports whether the next WAL sync may be direct. It reads the
// clock only while a suspension is recorded (the batcher asks before every
// cut), and forgets the suspension once it is over.
func (w *walSync) useDirect() bool {
	if !w.enabled.Load() {
		return false
	}
	off := w.offUntil.Load()
	if off == 0 {
		return true
	}
	if w.now().UnixNano() < off {
		return false
	}
	w.offUntil.CompareAndSwap(off, 0) // a later suspension stays
	return true
}

// rawSync is fdatasync (or fsync, full) on fd through syscall.RawSyscall.
func rawSync(fd uintptr, full bool) error {
	trap := uintptr(syscall.SYS_FDATASYNC)
	if full {
		trap = syscall.SYS_FSYNC
	}
	for {
		_, _, e := syscall.RawSyscall(trap, fd, 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue // a signal before the sync began: nothing was done
		default:
			return e
		}
	}
}

// walSyncFS is the file system Pebble gets on a real disk: vfs.Default,
// whose WAL files (created or recycled, named *.log) sync through ws.
type walSyncFS struct {
	vfs.FS
	ws *walSync
}

// Create implements vfs.FS. A new WAL is zero-filled first (walprefill.go).
// If that fails, the file is truncated back to empty and Pebble gets it as
// it would have without us: its appends then pay the metadata sync, and
// whatever made the zeros fail (a full or failing disk) reaches Pebble on
// its own writes.
func (fs walSyncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err == nil && isWALName(name) {
		if perr := prefillWAL(f, walPrefillSize); perr != nil {
			fs.ws.prefillFailed.Add(1)
			if fs.ws.onPrefillError != nil {
				fs.ws.onPrefillError(perr)
			}
			if terr := os.Truncate(name, 0); terr != nil {
				_ = f.Close()
				return nil, fmt.Errorf("raftstore: emptying %s after a failed zero-fill (%v): %w", name, perr, terr)
			}
		} else {
			fs.ws.prefilled.Add(1)
		}
	}
	return fs.wrap(name, f, err)
}

// ReuseForWrite implements vfs.FS: Pebble recycles old WAL files this way.
func (fs walSyncFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(newname, f, err)
}

func (fs walSyncFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isWALName(name) {
		return f, err
	}
	return &walFile{File: f, ws: fs.ws}, nil
}

// isWALName reports whether name is one of Pebble's write-ahead logs
// (000123.log; 000123-001.log under WAL failover).
func isWALName(name string) bool { return strings.HasSuffix(name, ".log") }

// walFile is a WAL file whose syncs are direct while the switch allows.
type walFile struct {
	vfs.File
	ws *walSync
}

// SyncData implements vfs.File: the WAL's sync on every commit.
func (f *walFile) SyncData() error { return f.sync(false) }

// Sync implements vfs.File.
func (f *walFile) Sync() error { return f.sync(true) }

func (f *walFile) sync(full bool) error {
	ws := f.ws
	fd := f.Fd()
	start := ws.now()
	if fd == vfs.InvalidFd || !ws.useDirect() {
		var err error
		if full {
			err = f.File.Sync()
		} else {
			err = f.File.SyncData()
		}
		if ws.afterSync != nil {
			ws.afterSync(false)
		}
		ws.ordinary.Add(1)
		ws.addSyncTime(ws.now().Sub(start))
		return err
	}
	err := ws.syncDirect(fd, full)
	if ws.afterSync != nil {
		ws.afterSync(true)
	}
	ws.direct.Add(1)
	took := ws.now().Sub(start)
	ws.addSyncTime(took)
	if took > slowDirectSync {
		ws.slow.Add(1)
		ws.offUntil.Store(start.Add(took + directSyncBackoff).UnixNano())
		if ws.onSlow != nil {
			ws.onSlow(took)
		}
	}
	return err
}

// addSyncTime adds one sync's duration to syncNanos (a clock stepped
// backwards counts nothing rather than wrapping the sum) and reports it to
// Options.ObserveWALSync.
func (w *walSync) addSyncTime(took time.Duration) {
	if took > 0 {
		w.syncNanos.Add(uint64(took))
	}
	if w.observe != nil {
		w.observe(took)
	}
}
