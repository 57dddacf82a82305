package forward

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"testing"

	"github.com/redcell/redcell/request"
)

// FuzzFrames reads arbitrary bytes as a stream of frames, as the leader's
// server and the follower's client do, and decodes each payload the way its
// kind says. Nothing may panic; a frame is returned only whole (its payload
// within the input); reading never allocates beyond a small multiple of the
// input, whatever lengths the frames declare; and every batch, result list
// and error that decodes re-encodes into a frame that reads back the same.
func FuzzFrames(f *testing.F) {
	r := request.Request{Code: request.Throttle, Key: []byte("k")}
	r.SetArgs(1, 2, 3)
	batch := []request.Request{r, {Code: request.Del, Keys: [][]byte{[]byte("a"), []byte("b")}}}
	var res [2]request.Result
	res[0].SetInt(7)
	res[1].SetErr(request.ErrInvalidOp)
	var calls, answers []byte
	calls = appendFrame(calls, 1, appendRequests(binary.AppendUvarint([]byte{kindPropose}, 0), batch))
	calls = append(calls, sealFrame(appendRequests(binary.AppendUvarint(startFrame(kindRead, 0), 3), batch), 5)...)
	calls = appendFrame(calls, math.MaxUint64, appendString(binary.AppendUvarint(binary.AppendUvarint([]byte{kindAdmin}, 0), 1), "RAFT.STATS"))
	answers = appendFrame(answers, 2, appendResults([]byte{statusOK}, res[:]))
	answers = appendFrame(answers, 3, appendError(nil, request.NotLeaderAt("127.0.0.1:7001")))
	f.Add(calls, false, uint8(2))
	f.Add(answers, true, uint8(2))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x03, 1, 1}, false, uint8(0))
	f.Add(appendFrame(nil, 9, []byte{kindRead, 0xff, 0xff, 0xff, 0xff, 0x0f}), false, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, responses bool, nres uint8) {
		br := bufio.NewReader(bytes.NewReader(data))
		var buf []byte
		var reqs []request.Request
		consumed := 0
		n := allocated(func() {
			for frames := 0; frames < 64; frames++ {
				id, kind, payload, nb, err := readFrame(br, buf)
				buf = nb
				if err != nil {
					return
				}
				consumed += len(payload) + 1
				if consumed > len(data) {
					t.Fatalf("frames of %d bytes read from %d", consumed, len(data))
				}
				switch {
				case !responses && (kind == kindPropose || kind == kindRead):
					grp, rest, err := readGroup(payload)
					if err != nil {
						continue
					}
					got, err := decodeRequests(rest, reqs)
					reqs = got
					if err != nil {
						continue
					}
					frame := sealFrame(appendRequests(binary.AppendUvarint(startFrame(kind, 0), grp), got), id)
					id2, kind2, p2, _, err := readFrame(bufio.NewReader(bytes.NewReader(frame)), nil)
					if err != nil || id2 != id || kind2 != kind {
						t.Fatalf("a re-encoded batch frame reads as %d/%d: %v", id2, kind2, err)
					}
					grp2, p2, err := readGroup(p2)
					if err != nil || grp2 != grp {
						t.Fatalf("a re-encoded batch frame names group %d, want %d: %v", grp2, grp, err)
					}
					again, err := decodeRequests(p2, nil)
					if err != nil || len(again) != len(got) {
						t.Fatalf("a re-encoded batch of %d decodes to %d: %v", len(got), len(again), err)
					}
					for i := range got {
						if !sameRequest(&got[i], &again[i]) {
							t.Fatalf("request %d changed: %+v, %+v", i, got[i], again[i])
						}
					}
				case responses && kind == statusOK:
					out := make([]request.Result, int(nres)%8)
					if err := decodeResults(payload, out); err != nil {
						continue
					}
					again := make([]request.Result, len(out))
					if err := decodeResults(appendResults(nil, out), again); err != nil {
						t.Fatalf("re-encoded results do not decode: %v", err)
					}
					for i := range out {
						if !out[i].Equal(again[i]) {
							t.Fatalf("result %d changed: %+v, %+v", i, out[i], again[i])
						}
					}
				case responses && kind == statusError:
					err := decodeError(payload)
					f, ok := err.(*request.Failure)
					if !ok {
						continue
					}
					back := appendError(nil, f)
					if again, ok := decodeError(back[1:]).(*request.Failure); !ok || *again != *f {
						t.Fatalf("failure %+v re-encodes to %+v", f, again)
					}
				}
			}
		})
		if limit := uint64(256<<10 + 64*len(data)); n > limit {
			t.Fatalf("reading %d bytes of frames allocated %d", len(data), n)
		}
	})
}

func sameRequest(a, b *request.Request) bool {
	if a.Code != b.Code || a.NArgs != b.NArgs || a.Args != b.Args || !bytes.Equal(a.Key, b.Key) || len(a.Keys) != len(b.Keys) {
		return false
	}
	for i := range a.Keys {
		if !bytes.Equal(a.Keys[i], b.Keys[i]) {
			return false
		}
	}
	return true
}

func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
