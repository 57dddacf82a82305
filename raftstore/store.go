// Package raftstore keeps a node's durable Raft state in one Pebble
// database: for each Raft group the node runs, hashicorp/raft's log
// (LogStore, MonotonicLogStore), its stable store (current term, vote) and
// its snapshots (SnapshotStore), each group in its own key span; and a few
// node-level records that belong to no group (the node's identity).
//
// Every append and every stable write is one Pebble batch committed with
// fsync before the call returns, so what raft has been told is stored
// survives a crash of the process or the machine. See DESIGN.md.
package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/slots"
)

// Options configures Open. The zero value is the production configuration.
type Options struct {
	// NoSync disables fsync. Only for benchmarks that want to isolate CPU
	// cost; never in production. Default false.
	NoSync bool
	// Logger receives Pebble's messages and the store's own warnings.
	// nil = slog.Default().
	Logger *slog.Logger
	// OnFatal is called, once, when Pebble reports that it cannot go on
	// (a failed WAL write or sync: after a failed fsync nothing the page
	// cache holds can be trusted). The store is then dead: the goroutine
	// Pebble called from never returns, so the owner must stop the process
	// without waiting for it (package node hands the error to cmd, which
	// exits). nil: panic, which stops the process too.
	OnFatal func(error)
	// ObserveWALSync, if set, is told the duration of every WAL sync
	// (what an append's fsync costs; package metrics' histogram). Called
	// from the goroutine Pebble syncs on, on the append path: it must be
	// quick and must not block.
	ObserveWALSync func(took time.Duration)
	// AfterWALSync, if set, runs after every WAL sync, on the goroutine
	// (and thread) that made it, before the sync's time is taken: direct
	// says the sync was a direct one (walsync.go). It is for benchmarks
	// that emulate a slower disk (cmd/redcell's redcell_slowdisk build
	// sleeps in it); nil, the default, costs one nil check per sync.
	AfterWALSync func(direct bool)
	// ObserveSnapshot, if set, is told each snapshot written to the store
	// (taken here or installed from the leader): its bytes and the time
	// from the sink's creation to its durable close. Called from the
	// goroutine that closes the sink (raft's snapshot or main goroutine).
	ObserveSnapshot func(bytes int64, took time.Duration)

	// fs replaces the real file system; tests use Pebble's crashable
	// in-memory FS to drop everything that was not fsynced.
	fs vfs.FS
}

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("raftstore: store is closed")

// DB is one node's Pebble database, shared by the Raft groups the node runs
// (Group) and holding its node-level records (NodeRecord). Its methods are
// safe for concurrent use.
type DB struct{ *database }

// database is what the groups of one DB share: Pebble, its lifecycle, the
// durability of commits and the WAL's syncs.
type database struct {
	db     *pebble.DB
	logger *slog.Logger
	// writeOpts is pebble.Sync, or pebble.NoSync for Options.NoSync.
	writeOpts *pebble.WriteOptions

	// life keeps Close from closing db under a running operation: every
	// method holds it shared for its whole duration, Close holds it
	// exclusively. Methods never take it twice (a waiting Close would
	// deadlock a nested read lock), so internal helpers assume it is held.
	life   sync.RWMutex
	closed bool

	// syncs counts fsynced commits of every group (Stats.Syncs).
	syncs atomic.Uint64

	// groupsMu guards groups, the stores Group has opened. Taken after life.
	groupsMu sync.Mutex
	groups   map[slots.GroupID]*Store

	// walSync switches the WAL's direct syncs and counts them (walsync.go).
	walSync *walSync
	// groupCommit and gsync: the groups' synced commits share fsyncs
	// (groupcommit.go).
	groupCommit atomic.Bool
	gsync       groupSync
	// onSnapshot is Options.ObserveSnapshot (nil: none).
	onSnapshot func(bytes int64, took time.Duration)
}

// Store is one Raft group's storage in a DB. It implements raft.LogStore,
// raft.MonotonicLogStore and raft.StableStore, and hands out a
// raft.SnapshotStore over the same keys (SnapshotStore). Its keys are the
// group's span of the database (keys.go); another group's Store never sees
// them.
//
// All methods are safe for concurrent use: raft calls the log store from its
// main goroutine (appends, truncation after a conflict), from one replication
// goroutine per follower (GetLog) and from its snapshot goroutine
// (DeleteRange after a snapshot), and the stable store from the main
// goroutine. Appends and stable writes block for one fsync.
type Store struct {
	*database
	keyspace
	// ownsDB: the store came from Open and its Close closes the database.
	ownsDB bool

	// logMu serialises the log's writers (StoreLogs, DeleteRange) from their
	// commit through the update of the cached bounds, so that firstIndex and
	// lastIndex always describe what is in Pebble once a writer returns.
	// Readers never take it: they load the atomics.
	logMu      sync.Mutex
	firstIndex atomic.Uint64 // 0 when the log is empty
	lastIndex  atomic.Uint64 // 0 when the log is empty

	stats statCounters
	// coming is set by AppendComing until the next append is written.
	coming atomic.Bool
	// appendNotify is the channel NotifyAppends set, if any.
	appendNotify appendNotifier

	snaps snapshotRegistry

	// directVote is this group's SetDirectWALSync; guarded by groupsMu.
	directVote bool
}

// SetDirectWALSync is this group's vote for direct WAL syncs (walsync.go):
// true while the group's node is the only server of its configuration
// (group/alonemode.go). The WAL is the database's, shared by every group,
// and a direct sync holds its thread's P until the disk answers, which only
// a node with no peer in any group can afford: so direct syncs are on while
// every group opened in the database votes for them, and off as soon as one
// does not. Off after OpenDB. Safe from any goroutine; takes effect from the
// next sync.
func (s *Store) SetDirectWALSync(on bool) {
	s.groupsMu.Lock()
	defer s.groupsMu.Unlock()
	s.directVote = on
	all := len(s.groups) > 0
	for _, g := range s.groups {
		all = all && g.directVote
	}
	s.walSync.enabled.Store(all)
}

// DirectWALSyncActive reports whether the next WAL sync will be direct: the
// switch is on and no slow sync has suspended direct syncs. The batcher
// reads it before every cut (group/batcher.go): a direct sync holds the
// thread's P, so nothing of the node's runs while it lasts, and the next
// entry has to let the connections it answered queue first. Any goroutine.
func (d *database) DirectWALSyncActive() bool { return d.walSync.useDirect() }

// Open opens (creating if needed) the database in dir and returns the store
// of group 0, which owns the database: its Close closes the database. It is
// for a process that runs one group and needs no node-level records (tests,
// tools); a node opens the database with OpenDB and each group with
// DB.Group.
func Open(dir string, opts Options) (*Store, error) {
	d, err := OpenDB(dir, opts)
	if err != nil {
		return nil, err
	}
	s, err := d.Group(0)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	s.ownsDB = true
	return s, nil
}

// OpenDB opens (creating if needed) the Pebble database in dir, migrating a
// data dir of an earlier key layout to the current one first (migrate.go).
// Only one DB may have a directory open at a time (Pebble locks it).
func OpenDB(dir string, opts Options) (*DB, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "raftstore")

	if opts.fs == nil {
		// Pebble would take synced-but-damaged WAL data for a torn tail
		// and drop acknowledged entries (walcheck.go).
		if err := checkWALs(dir); err != nil {
			return nil, err
		}
	}
	fresh := opts.fs == nil && isEmptyOrMissing(dir)
	ws := newWALSync()
	ws.onSlow = func(took time.Duration) {
		logger.Warn("a direct WAL sync was slow: syncing the ordinary way for a while", "took", took, "for", directSyncBackoff)
	}
	ws.observe = opts.ObserveWALSync
	ws.afterSync = opts.AfterWALSync
	ws.onPrefillError = func(err error) {
		logger.Warn("could not zero-fill a new WAL: its appends sync the file's size too", "error", err)
	}
	db, err := pebble.Open(dir, pebbleOptions(opts, logger, ws))
	if errors.Is(err, syscall.EWOULDBLOCK) {
		// Pebble's LOCK file is held: flock refuses a second process.
		return nil, fmt.Errorf("raftstore: another process holds the data dir %s (its LOCK file is locked): %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: open pebble in %s: %w", dir, err)
	}
	if fresh {
		// A new database writes its first WAL before it reaches the
		// pinned format version, so that WAL lacks the sync offsets that
		// let walcheck.go (and Pebble) tell synced data from a torn tail.
		// Reopening starts a WAL that has them; it costs milliseconds,
		// once per data dir.
		if err := db.Close(); err != nil {
			return nil, fmt.Errorf("raftstore: reopen new pebble in %s: %w", dir, err)
		}
		if db, err = pebble.Open(dir, pebbleOptions(opts, logger, ws)); err != nil {
			return nil, fmt.Errorf("raftstore: reopen new pebble in %s: %w", dir, err)
		}
	}
	d := &database{
		db:        db,
		logger:    logger,
		writeOpts: pebble.Sync,
		walSync:   ws,
		groups:    make(map[slots.GroupID]*Store),
	}
	d.onSnapshot = opts.ObserveSnapshot
	if opts.NoSync {
		d.writeOpts = pebble.NoSync
	}
	if err := d.migrate(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return &DB{d}, nil
}

// Group returns the store of group id. The first call for a group reads its
// log bounds and snapshot figures and removes the chunks of snapshots a
// crash left unfinished; later calls return the same store. A group that
// has never been written starts empty.
func (d *DB) Group(id slots.GroupID) (*Store, error) {
	if err := d.acquire(); err != nil {
		return nil, err
	}
	defer d.release()
	d.groupsMu.Lock()
	defer d.groupsMu.Unlock()
	if s, ok := d.groups[id]; ok {
		return s, nil
	}
	s := &Store{database: d.database, keyspace: newKeyspace(id)}
	s.snaps.init()
	if err := s.loadLogBounds(); err != nil {
		return nil, err
	}
	if err := s.loadLogBytes(); err != nil {
		return nil, err
	}
	// No sink of this group can be running yet, so every chunk without
	// metadata belongs to a snapshot that was being written when the
	// process died.
	if err := s.deleteOrphanChunks(); err != nil {
		return nil, err
	}
	d.groups[id] = s
	d.walSync.enabled.Store(false) // the new group has not voted (SetDirectWALSync)
	return s, nil
}

// Close closes the database if s owns it (it came from Open). A store from
// DB.Group lives as long as its DB, and its Close does nothing.
func (s *Store) Close() error {
	if !s.ownsDB {
		return nil
	}
	return (&DB{s.database}).Close()
}

// Close closes the database and with it every group's store. Raft must
// have been shut down first in every group; snapshot readers still open are
// closed (their next Read returns ErrClosed), sinks still open fail on their
// next call and their chunks are removed when the group is next opened.
// Close is idempotent.
func (d *DB) Close() error {
	d.life.Lock()
	defer d.life.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.groupsMu.Lock()
	for _, s := range d.groups {
		s.snaps.closeReaders()
	}
	d.groupsMu.Unlock()
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("raftstore: close pebble: %w", err)
	}
	return nil
}

// acquire takes the lifecycle lock shared, failing if the store is closed.
// Every successful acquire must be paired with release.
func (d *database) acquire() error {
	d.life.RLock()
	if d.closed {
		d.life.RUnlock()
		return ErrClosed
	}
	return nil
}

func (d *database) release() { d.life.RUnlock() }

// commit commits b with the store's durability (fsync unless NoSync) and
// counts the fsync.
func (d *database) commit(b *pebble.Batch) error { return d.commitAnnounced(b, nil) }

// commitAnnounced is commit for a write that coming (a store's
// AppendComing flag, or nil) may have announced: the announcement is
// withdrawn once the write is in the WAL.
func (d *database) commitAnnounced(b *pebble.Batch, coming *atomic.Bool) error {
	if d.writeOpts.Sync && d.groupCommit.Load() {
		// Several groups share the WAL: write now, sync with them
		// (groupcommit.go).
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		if err := d.gsync.sync(syncWAL(d.db), coming); err != nil {
			return err
		}
		d.syncs.Add(1)
		return nil
	}
	if coming != nil && coming.CompareAndSwap(true, false) {
		d.gsync.coming.Add(-1)
	}
	if err := b.Commit(d.writeOpts); err != nil {
		return err
	}
	if d.writeOpts.Sync {
		d.syncs.Add(1)
	}
	return nil
}

// Compile-time checks that Store is what raft expects.
var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
	_ raft.StableStore       = (*Store)(nil)
)

// Stats are one group's cumulative counters since it was opened, for INFO and benchmarks.
type Stats struct {
	// Appends counts StoreLog and StoreLogs calls that committed.
	Appends uint64
	// EntriesAppended counts the log entries those calls stored.
	EntriesAppended uint64
	// BytesAppended counts the encoded bytes (keys and values) of the
	// appended entries, before Pebble's own framing.
	BytesAppended uint64

	// LogBytesSinceSnapshot is the log a restart would replay on top of the
	// newest snapshot, counted like BytesAppended: when the group is opened, the bytes of the
	// entries after the newest snapshot's index; then every append adds to
	// it, and a snapshot that completes sets it back to the bytes appended
	// since that snapshot was created (see logbytes.go). Not a cumulative
	// counter, and not exact (see DESIGN.md); it is what package group
	// snapshots on.
	LogBytesSinceSnapshot uint64
	// LastSnapshotBytes is the size of the newest snapshot's data: found at
	// Open, then of each snapshot that completes. 0 when there is none.
	LastSnapshotBytes uint64
	// LastSnapshotUnixMS is when the newest snapshot was created (the
	// wall-clock milliseconds in its ID): found when the group is opened, then of each
	// snapshot that completes. 0 when there is none. LASTSAVE answers it.
	LastSnapshotUnixMS uint64
	// SnapshotsCompleted counts snapshot sinks closed successfully since
	// Open (taken here or received from a leader).
	SnapshotsCompleted uint64
}

// WALStats are the database's own counters, shared by every group it
// holds: its fsyncs and how its WAL was synced. A node reports them once,
// however many groups it runs (Stats are each group's).
type WALStats struct {
	// Syncs counts fsynced commits of any kind (appends, stable writes,
	// deletes, snapshot metadata) of every group of the database. Zero with
	// Options.NoSync.
	Syncs uint64
	// DirectWALSyncs and OrdinaryWALSyncs count the WAL's syncs by the way
	// they were made (walsync.go); SlowDirectWALSyncs the direct ones that
	// took longer than 20 ms and suspended direct syncs for 10 s. All 0 on
	// an injected file system (tests).
	DirectWALSyncs, OrdinaryWALSyncs, SlowDirectWALSyncs uint64
	// WALSyncTime is the time spent in those syncs, both kinds: the disk's
	// share of the appends' time.
	WALSyncTime time.Duration
	// DirectWALSyncOn reports whether the next WAL sync may be direct.
	DirectWALSyncOn bool
	// WALsZeroFilled counts new WAL files written with zeros before use,
	// WALZeroFillsFailed those that could not be (walprefill.go).
	WALsZeroFilled, WALZeroFillsFailed uint64
}

// WALStats returns the database's counters. It never blocks and may be
// called after Close.
func (d *database) WALStats() WALStats {
	return WALStats{
		Syncs:              d.syncs.Load(),
		DirectWALSyncs:     d.walSync.direct.Load(),
		OrdinaryWALSyncs:   d.walSync.ordinary.Load(),
		SlowDirectWALSyncs: d.walSync.slow.Load(),
		WALSyncTime:        time.Duration(d.walSync.syncNanos.Load()),
		DirectWALSyncOn:    d.walSync.useDirect(),
		WALsZeroFilled:     d.walSync.prefilled.Load(),
		WALZeroFillsFailed: d.walSync.prefillFailed.Load(),
	}
}

type statCounters struct {
	appends, entriesAppended, bytesAppended atomic.Uint64

	// snapMark is bytesAppended at the creation of the newest completed
	// snapshot, so LogBytesSinceSnapshot = bytesAppended - snapMark. It
	// starts negative: minus the bytes already in the log after the newest
	// snapshot when the group was opened. Guarded by snapMu with lastSnapBytes and snapshots.
	snapMu        sync.Mutex
	snapMark      int64
	lastSnapBytes uint64
	lastSnapMS    uint64
	snapshots     uint64
}

// Stats returns the counters. It never blocks and may be called after Close.
// The fields are read one by one, so a snapshot taken during an append may
// count the append in one field and not yet in another.
func (s *Store) Stats() Stats {
	st := Stats{
		Appends:         s.stats.appends.Load(),
		EntriesAppended: s.stats.entriesAppended.Load(),
		BytesAppended:   s.stats.bytesAppended.Load(),
	}
	s.stats.snapMu.Lock()
	if since := int64(st.BytesAppended) - s.stats.snapMark; since > 0 {
		st.LogBytesSinceSnapshot = uint64(since)
	}
	st.LastSnapshotBytes = s.stats.lastSnapBytes
	st.LastSnapshotUnixMS = s.stats.lastSnapMS
	st.SnapshotsCompleted = s.stats.snapshots
	s.stats.snapMu.Unlock()
	return st
}

// isEmptyOrMissing reports whether dir holds nothing (or does not exist).
func isEmptyOrMissing(dir string) bool {
	entries, err := os.ReadDir(dir)
	return (err != nil && errors.Is(err, os.ErrNotExist)) || (err == nil && len(entries) == 0)
}
