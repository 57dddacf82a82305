package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/redcell/redcell/scripting"
	"hash"
	"hash/crc32"
	"io"
	"maps"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
	"github.com/redcell/redcell/slidinglog"
)

// Snapshot stream format, version 5:
//
//	[4]byte "RCSN", byte version (5)
//	int64   replicated clock (little endian)
//	uint64  number of records (little endian)
//	uint64  the term of the last applied entry (little endian)
//	records in ascending key order, each either a live key:
//	  byte kind (| 0x80 when a value follows), uvarint key length, key,
//	  varint expire, varint a, varint b, uvarint change marker,
//	  [uvarint value length, value]   only when the kind byte has 0x80
//	or a gone key (a tombstone, or a key past its expiry) that is kept for
//	its change marker, shard.Linger after it went (WATCH, watchguard.go):
//	  byte 0, uvarint key length, key, varint expire (<= clock),
//	  uvarint change marker
//	the script cache (scripts.go): uvarint number of scripts, then each
//	  script's body (uvarint length, bytes) in the order of their SHA-1s
//	uint32  CRC-32C of every byte before it (little endian)
//
// Version 6 is version 5 followed, after the script cache, by the
// cluster's active feature level (uvarint, above request.BaseFeatureLevel).
// It is written only when the level is above the base (every member then
// runs a build that reads it); at the base level a snapshot is version 5,
// byte for byte what a build before feature levels wrote, so that such a
// build can still install it during a rolling upgrade. Versions 1 to 5
// restore at the base level.
//
// Version 4 is version 5 without the script cache: it restores with an
// empty one.
//
// Version 3 has neither the term nor markers nor gone records: its records
// are version 4's live records without the marker. A version 3 (or older)
// stream restores with every marker 0 and term 0, which is safe because WATCH compares markers only as "> w",
// and any w is read after the restore.
//
// Version 2 is the same as 3, except that a CL (GCRA) record's b is always 0
// there; from version 3 it holds the key's expiry in Unix ms when that lies
// past 2262, the end of int64 nanoseconds (see cl.go: expire is then
// saturated at MaxInt64). Version 1 is version 2 without values (no kind
// byte has 0x80). A record is written exactly as the older versions wrote it
// whenever they could express it. Restore reads all three; a version 1
// stream has only CL keys. The version was bumped for the wide CL expiry so
// that an older build refuses such a stream instead of answering a wrong
// PTTL from it.
//
// Keys are sorted so that the same log gives byte-identical snapshots on every
// replica, whatever its stripe count or table layout. Idle keys (expired at
// the replicated clock) are left out: they are equivalent to absent.
const (
	snapshotMagic = "RCSN"
	// snapshotVersion is what this build writes at the base feature level,
	// snapshotV6 above it; snapshotV1 to snapshotV4 still restore.
	snapshotVersion = 5
	snapshotV6      = 6
	snapshotV4      = 4
	snapshotV3      = 3
	snapshotV2      = 2
	snapshotV1      = 1
	// recordHasValue flags a record's kind byte when a value follows.
	recordHasValue = 0x80
	// recordGone is the kind byte of a gone record (version 4): no kind
	// has the number 0.
	recordGone = 0
	// maxSnapshotKey bounds one key read from a snapshot stream, so a corrupt
	// stream cannot make Restore allocate from a declared length. Redis caps
	// a bulk string at 512 MB; keys here are far smaller in practice.
	maxSnapshotKey = 512 << 20
	// maxSnapshotValue bounds one value likewise. The largest value is a
	// sliding log of limit runs; what one request can create is bounded by
	// what it can write in the log, far below this.
	maxSnapshotValue = 512 << 20
	// maxSnapshotScript bounds one script's body likewise (a request
	// carrying it fits the log, far below this).
	maxSnapshotScript = 512 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Snapshot implements raft.FSM. It runs on the FSM goroutine and only copies
// the live entries (memcpy-like); sorting and writing happen in Persist.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.waitStartup()
	if f.failed.Load() {
		// The entry that stopped the state machine may be half applied:
		// such a state must never become a snapshot that outlives the node.
		return nil, errStopped
	}
	return f.snapshot(), nil
}

func (f *FSM) snapshot() *fsmSnapshot {
	f.applyMu.RLock()
	defer f.applyMu.RUnlock()
	clock := f.clock.Load()
	return &fsmSnapshot{clock: clock, term: f.term.Load(), snap: f.store.Snapshot(clock), scripts: maps.Clone(f.scripts),
		level: f.FeatureLevel()}
}

type fsmSnapshot struct {
	clock   int64
	term    uint64
	snap    *shard.Snapshot
	scripts scriptCache // a copy of the map; bodies are never changed
	level   request.FeatureLevel
}

// version is the stream version s is written as: 6 only when the feature
// level needs saying.
func (s *fsmSnapshot) version() byte {
	if s.level > request.BaseFeatureLevel {
		return snapshotV6
	}
	return snapshotVersion
}

// Persist writes the snapshot to sink; it runs concurrently with ApplyBatch.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("fsm: persisting snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) write(w io.Writer) error {
	cw := &crcWriter{h: crc32.New(crcTable), w: w}
	bw := bufio.NewWriterSize(cw, 256<<10)
	var hdr [4 + 1 + 8 + 8 + 8]byte
	copy(hdr[:], snapshotMagic)
	hdr[4] = s.version()
	binary.LittleEndian.PutUint64(hdr[5:], uint64(s.clock))
	binary.LittleEndian.PutUint64(hdr[13:], uint64(s.snap.Len()))
	binary.LittleEndian.PutUint64(hdr[21:], s.term)
	if _, err := bw.Write(hdr[:]); err != nil {
		return err
	}
	var rec []byte
	var werr error
	s.snap.Range(func(key []byte, st shard.State) bool {
		if st.Expire <= s.clock {
			// Gone: only its marker matters (its kind, fields and value
			// may be whatever it held before, which nothing reads).
			rec = append(rec[:0], recordGone)
			rec = appendBytes(rec, key)
			rec = binary.AppendVarint(rec, st.Expire)
			rec = binary.AppendUvarint(rec, st.Mark)
			_, werr = bw.Write(rec)
			return werr == nil
		}
		kind := byte(st.Kind)
		if len(st.Val) > 0 {
			kind |= recordHasValue
		}
		rec = append(rec[:0], kind)
		rec = appendBytes(rec, key)
		rec = binary.AppendVarint(rec, st.Expire)
		rec = binary.AppendVarint(rec, st.A)
		rec = binary.AppendVarint(rec, st.B)
		rec = binary.AppendUvarint(rec, st.Mark)
		if len(st.Val) > 0 {
			rec = appendBytes(rec, st.Val)
		}
		_, werr = bw.Write(rec)
		return werr == nil
	})
	if werr != nil {
		return werr
	}
	rec = binary.AppendUvarint(rec[:0], uint64(len(s.scripts)))
	if _, err := bw.Write(rec); err != nil {
		return err
	}
	for _, sha := range s.scripts.sorted() {
		if _, err := bw.Write(appendBytes(rec[:0], s.scripts[sha])); err != nil {
			return err
		}
	}
	if s.version() == snapshotV6 {
		if _, err := bw.Write(binary.AppendUvarint(rec[:0], uint64(s.level))); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return binary.Write(w, binary.LittleEndian, cw.h.Sum32())
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}

type crcWriter struct {
	h hash.Hash32
	w io.Writer
}

func (c *crcWriter) Write(p []byte) (int, error) {
	c.h.Write(p)
	return c.w.Write(p)
}

// WriteSnapshot writes the current state in snapshot format to w, even after
// a fatal apply error (raft's Snapshot refuses then). Tests use it to compare
// replicas byte for byte.
func (f *FSM) WriteSnapshot(w io.Writer) error {
	return f.snapshot().write(w)
}

// Restore implements raft.FSM: it replaces the whole state with the snapshot
// in rc, or leaves the state untouched if the stream is invalid.
func (f *FSM) Restore(rc io.ReadCloser) error {
	f.waitStartup()
	if err := f.restore(rc); err != nil {
		return err
	}
	f.restores.Add(1)
	f.notifyApplied()
	return nil
}

func (f *FSM) restore(rc io.ReadCloser) error {
	defer rc.Close()
	h, store, scripts, err := readSnapshot(rc, f.cfg.Stripes)
	if err != nil {
		return fmt.Errorf("fsm: restoring snapshot: %w", err)
	}
	f.applyMu.Lock()
	f.store = store
	f.scripts = scripts
	f.level.Store(uint32(h.level))
	f.clock.Store(h.clock)
	f.term.Store(h.term)
	if w := f.watching(); w != nil {
		w.Written(nil, true) // every key may have changed
	}
	f.applyMu.Unlock()
	return nil
}

// snapshotHeader is what a stream's header says besides its record count.
type snapshotHeader struct {
	version byte
	clock   int64
	term    uint64 // 0 before version 4
	level   request.FeatureLevel
}

func readSnapshot(r io.Reader, stripes int) (snapshotHeader, *shard.Store, scriptCache, error) {
	h := snapshotHeader{level: request.BaseFeatureLevel}
	hr := &hashingReader{r: bufio.NewReaderSize(r, 256<<10), h: crc32.New(crcTable)}
	var hdr [4 + 1 + 8 + 8 + 8]byte
	if _, err := io.ReadFull(hr, hdr[:21]); err != nil {
		return h, nil, nil, fmt.Errorf("reading header: %w", err)
	}
	if string(hdr[:4]) != snapshotMagic {
		return h, nil, nil, errors.New("not a Redcell snapshot")
	}
	h.version = hdr[4]
	if h.version < snapshotV1 || h.version > snapshotV6 {
		return h, nil, nil, fmt.Errorf("snapshot version %d, this node understands %d to %d", h.version, snapshotV1, snapshotV6)
	}
	h.clock = int64(binary.LittleEndian.Uint64(hdr[5:]))
	count := binary.LittleEndian.Uint64(hdr[13:])
	if h.version >= snapshotV4 {
		if _, err := io.ReadFull(hr, hdr[21:]); err != nil {
			return h, nil, nil, fmt.Errorf("reading header: %w", err)
		}
		h.term = binary.LittleEndian.Uint64(hdr[21:])
	}
	store := shard.New(stripes)
	var rr recordReader
	var prev []byte
	for i := uint64(0); i < count; i++ {
		st, err := rr.read(hr, h.version, h.clock)
		if err != nil {
			return h, nil, nil, fmt.Errorf("record %d: %w", i, err)
		}
		// Every writer sorts its records (that is what makes replicas'
		// snapshots byte-identical), so a key out of order or repeated
		// means the stream was not written by a Redcell node: restoring it
		// would silently keep one of two states for a key.
		if i > 0 && bytes.Compare(prev, rr.key) >= 0 {
			return h, nil, nil, fmt.Errorf("record %d: key %q not after the previous key %q", i, rr.key, prev)
		}
		prev = append(prev[:0], rr.key...)
		if h.version < snapshotV4 && st.Expire <= h.clock {
			continue // gone, and without a marker: the same as absent
		}
		store.Load(rr.key, st)
	}
	scripts := scriptCache{}
	if h.version >= snapshotVersion {
		var err error
		if scripts, err = readScripts(hr); err != nil {
			return h, nil, nil, fmt.Errorf("script cache: %w", err)
		}
	}
	if h.version >= snapshotV6 {
		var err error
		if h.level, err = readLevel(hr); err != nil {
			return h, nil, nil, err
		}
	}
	want := hr.h.Sum32()
	var trailer [4]byte
	if _, err := io.ReadFull(hr.r, trailer[:]); err != nil {
		return h, nil, nil, fmt.Errorf("reading checksum: %w", err)
	}
	if got := binary.LittleEndian.Uint32(trailer[:]); got != want {
		return h, nil, nil, fmt.Errorf("checksum mismatch: stream says %08x, content is %08x", got, want)
	}
	// The checksum ends the stream: more bytes mean a count that is too
	// small, or two streams run together.
	if _, err := hr.r.ReadByte(); err != io.EOF {
		return h, nil, nil, errors.New("bytes after the checksum")
	}
	return h, store, scripts, nil
}

// readLevel reads a version 6 stream's feature level: above the base (a
// writer writes version 5 at the base level), and one this build supports
// (a node that restored a level it cannot apply would misread what
// follows; request.UnsupportedLevelError says what to do).
func readLevel(r *hashingReader) (request.FeatureLevel, error) {
	v, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, fmt.Errorf("reading the feature level: %w", err)
	}
	switch {
	case v <= uint64(request.BaseFeatureLevel):
		return 0, fmt.Errorf("feature level %d in a version %d snapshot, which no writer writes", v, snapshotV6)
	case v > uint64(request.SupportedFeatureLevel):
		return 0, request.UnsupportedLevelError(request.FeatureLevel(min(v, 1<<32-1)))
	}
	return request.FeatureLevel(v), nil
}

// readScripts reads a stream's script cache: its bodies in the order of
// their SHA-1s, which a writer never repeats.
func readScripts(r *hashingReader) (scriptCache, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	scripts := scriptCache{}
	prev := ""
	for i := uint64(0); i < n; i++ {
		body, err := readChunked(r, nil, maxSnapshotScript)
		if err != nil {
			return nil, fmt.Errorf("script %d: %w", i, err)
		}
		sha := scripting.SHA1Hex(body)
		if i > 0 && sha <= prev {
			return nil, fmt.Errorf("script %d: SHA-1 %s not after the previous %s", i, sha, prev)
		}
		scripts[sha], prev = body, sha
	}
	return scripts, nil
}

// recordReader reads snapshot records, reusing its buffers: a record's key
// and value are valid until the next read.
type recordReader struct {
	key, val []byte
	runs     []slidinglog.Run
}

func (rr *recordReader) read(r *hashingReader, version byte, clock int64) (shard.State, error) {
	var st shard.State
	kind, err := r.ReadByte()
	if err != nil {
		return st, err
	}
	if kind == recordGone && version >= snapshotV4 {
		return rr.readGone(r, clock)
	}
	hasValue := kind&recordHasValue != 0
	st.Kind = shard.Kind(kind &^ recordHasValue)
	if version == snapshotV1 && hasValue {
		return st, errors.New("a value in a version 1 snapshot")
	}
	if rr.key, err = readChunked(r, rr.key, maxSnapshotKey); err != nil {
		return st, fmt.Errorf("key: %w", err)
	}
	if st.Expire, err = binary.ReadVarint(r); err != nil {
		return st, err
	}
	if st.A, err = binary.ReadVarint(r); err != nil {
		return st, err
	}
	if st.B, err = binary.ReadVarint(r); err != nil {
		return st, err
	}
	if version >= snapshotV4 {
		if st.Mark, err = binary.ReadUvarint(r); err != nil {
			return st, err
		}
		if st.Expire <= clock {
			// A writer writes a gone key as a gone record.
			return st, fmt.Errorf("a key of kind %d gone at %d, before the clock %d", st.Kind, st.Expire, clock)
		}
	}
	if hasValue {
		if rr.val, err = readChunked(r, rr.val, maxSnapshotValue); err != nil {
			return st, fmt.Errorf("value: %w", err)
		}
		st.Val = rr.val
	}
	if err := rr.check(st, version); err != nil {
		return st, err
	}
	return st, nil
}

// readGone reads the rest of a gone record: its key, the instant it went
// and its marker. A writer keeps gone keys exactly while they are younger
// than shard.Linger at its clock, so any other is refused.
func (rr *recordReader) readGone(r *hashingReader, clock int64) (shard.State, error) {
	var st shard.State
	var err error
	if rr.key, err = readChunked(r, rr.key, maxSnapshotKey); err != nil {
		return st, fmt.Errorf("key: %w", err)
	}
	if st.Expire, err = binary.ReadVarint(r); err != nil {
		return st, err
	}
	if st.Mark, err = binary.ReadUvarint(r); err != nil {
		return st, err
	}
	if st.Expire > clock || uint64(clock)-uint64(st.Expire) >= uint64(shard.Linger) {
		return st, fmt.Errorf("a gone key gone at %d, not within %d ns before the clock %d", st.Expire, shard.Linger, clock)
	}
	return st, nil
}

// check refuses a record that apply could never have written: an unknown
// kind, a value where the kind's family has none (or none where it needs
// one), and whatever the family's own check refuses (a CL expiry B cannot
// hold, a sliding log not in slidinglog's canonical encoding). A restore that
// accepted one would answer differently from the replica that wrote the
// snapshot, and its own next snapshot would not restore (FuzzRestore found
// that for an unknown kind).
func (rr *recordReader) check(st shard.State, version byte) error {
	fam := kindFamily(st.Kind)
	if fam == nil {
		return fmt.Errorf("unknown key kind %d", st.Kind)
	}
	if len(st.Val) > 0 && !fam.hasValue || len(st.Val) == 0 && fam.hasValue && !fam.emptyValue {
		return fmt.Errorf("key kind %d with a value of %d bytes", st.Kind, len(st.Val))
	}
	if fam.check != nil {
		return fam.check(rr, st, version)
	}
	return nil
}

// readChunked reads a uvarint length n ≤ limit and then n bytes into
// buf[:0], growing it 64 KiB at a time as the bytes arrive, so a corrupt
// length cannot make it allocate more than the stream holds.
func readChunked(r *hashingReader, buf []byte, limit uint64) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil || n > limit {
		return buf, errors.New("bad length")
	}
	buf = buf[:0]
	for uint64(len(buf)) < n {
		chunk := int(min(n-uint64(len(buf)), 64<<10))
		buf = slices.Grow(buf, chunk)
		l := len(buf)
		buf = buf[:l+chunk]
		if _, err := io.ReadFull(r, buf[l:]); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// hashingReader checksums exactly the bytes its caller consumes (a plain
// TeeReader under bufio would also hash the read-ahead, trailer included).
type hashingReader struct {
	r   *bufio.Reader
	h   hash.Hash32
	one [1]byte
}

func (r *hashingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.h.Write(p[:n])
	return n, err
}

func (r *hashingReader) ReadByte() (byte, error) {
	b, err := r.r.ReadByte()
	if err == nil {
		r.one[0] = b
		r.h.Write(r.one[:])
	}
	return b, err
}

// appendBytes appends s with its uvarint length.
func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
