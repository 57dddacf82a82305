package raftstore

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func encodeForTest(l *raft.Log) []byte {
	b := make([]byte, encodedLogLen(l))
	encodeLog(b, l)
	return b
}

func TestLogCodec_LengthIsExact(t *testing.T) {
	logs := []*raft.Log{
		{},
		{Index: 1 << 63, Term: 127, AppendedAt: time.Unix(-1, 999_999_999)},
		{Index: 128, Term: 1 << 14, Data: make([]byte, 300), Extensions: make([]byte, 128), AppendedAt: time.Unix(1<<40, 0)},
		testEntry(12345),
	}
	for _, l := range logs {
		b := encodeForTest(l)
		var got raft.Log
		if err := decodeLog(b, &got); err != nil {
			t.Fatalf("decode(%+v): %v", l, err)
		}
		if !sameLog(&got, l) {
			t.Fatalf("round trip %+v -> %+v", l, got)
		}
	}
}

// A compact encoding is the point: a typical proposer entry costs a few bytes
// of framing, not msgpack's field names.
func TestLogCodec_OverheadIsSmall(t *testing.T) {
	l := &raft.Log{Index: 1_000_000, Term: 7, Type: raft.LogCommand, Data: make([]byte, 100), AppendedAt: time.Unix(1_700_000_000, 5)}
	if n := len(encodeForTest(l)) - len(l.Data); n > 24 {
		t.Fatalf("framing of a 100-byte entry is %d bytes, want <= 24", n)
	}
}

func TestLogCodec_RejectsBadInput(t *testing.T) {
	valid := encodeForTest(testEntry(300))
	withVersion := func(v byte) []byte { b := bytes.Clone(valid); b[0] = v; return b }
	withFlags := func(f byte) []byte { b := bytes.Clone(valid); b[2] = f; return b }
	hugeData := []byte{logCodecV1, 0, 0, 1, 1}
	hugeData = binary.AppendUvarint(hugeData, 1<<62)
	badNanos := []byte{logCodecV1, 0, flagAppendedAt, 1, 1}
	badNanos = binary.AppendVarint(badNanos, 5)
	badNanos = binary.AppendUvarint(badNanos, uint64(time.Second))
	badNanos = append(badNanos, 0, 0)
	overflow := []byte{logCodecV1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0}

	cases := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"empty", nil, "truncated"},
		{"version 0", withVersion(0), "unknown log entry encoding version 0"},
		{"version 2", withVersion(2), "unknown log entry encoding version 2"},
		{"unknown flag", withFlags(0x82), "unknown log entry flags"},
		{"trailing byte", append(bytes.Clone(valid), 0), "trailing"},
		{"length beyond input", hugeData, "truncated"},
		{"nanoseconds out of range", badNanos, "nanoseconds"},
		{"varint overflow", overflow, "overflows"},
	}
	for _, c := range cases {
		out := raft.Log{Index: 42}
		err := decodeLog(c.in, &out)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.wantErr)
		}
		if out.Index != 42 {
			t.Errorf("%s: output modified on error", c.name)
		}
	}
	// Every strict prefix of a valid value is truncated, never accepted.
	for n := 0; n < len(valid); n++ {
		if err := decodeLog(valid[:n], new(raft.Log)); err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded without error", n, len(valid))
		}
	}
}

// FuzzDecodeLog checks that no input makes the decoder panic or allocate
// without bound, and that whatever it accepts re-encodes to something that
// decodes to the same entry. `go test` runs the seeds; `go test -fuzz` explores.
func FuzzDecodeLog(f *testing.F) {
	f.Add(encodeForTest(testEntry(1)))
	f.Add(encodeForTest(&raft.Log{}))
	f.Add(encodeForTest(&raft.Log{Index: ^uint64(0), AppendedAt: time.Unix(-1<<40, 1)}))
	f.Add([]byte{logCodecV1, 0, 1, 0x80})
	f.Fuzz(func(t *testing.T, in []byte) {
		var l raft.Log
		if err := decodeLog(in, &l); err != nil {
			return
		}
		if len(l.Data)+len(l.Extensions) > len(in) {
			t.Fatalf("decoded %d payload bytes from %d input bytes", len(l.Data)+len(l.Extensions), len(in))
		}
		var again raft.Log
		if err := decodeLog(encodeForTest(&l), &again); err != nil {
			t.Fatalf("re-encoding of accepted input does not decode: %v", err)
		}
		if !sameLog(&l, &again) {
			t.Fatalf("re-encoding changed the entry: %+v -> %+v", l, again)
		}
	})
}
