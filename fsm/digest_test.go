package fsm

import (
	"crypto/sha256"
	"testing"

	"github.com/redcell/redcell/request"
)

// Replicas with different stripe counts that applied the same entries
// report the same index and digest, which equals the SHA-256 of their
// snapshot; one more write on one replica changes both.
func TestDigestIdentifiesTheState(t *testing.T) {
	a, b := quietFSM(1), quietFSM(64)
	gen := newOpGen(7, 50)
	const stamp = int64(1_700_000_000_000_000_000)
	for i := uint64(1); i <= 40; i++ {
		ops := make([]request.Request, 20)
		for j := range ops {
			ops[j] = gen.op()
		}
		data := encodeEntry(stamp+int64(i)*1e6, ops)
		applyOne(t, a, commandLog(i, data))
		applyOne(t, b, commandLog(i, data))
	}
	ia, da, err := a.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ib, db, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if ia != 40 || ib != 40 || da != db {
		t.Fatalf("replicas at %d and %d: digests %x and %x", ia, ib, da, db)
	}
	if want := sha256.Sum256(snapshotBytes(t, a)); want != da {
		t.Errorf("digest %x is not the SHA-256 of the snapshot (%x)", da, want)
	}
	applyOne(t, a, commandLog(41, encodeEntry(stamp+41e6, []request.Request{gen.op()})))
	if ia2, da2, _ := a.Digest(); ia2 != 41 || da2 == da {
		t.Errorf("after one more entry: index %d, digest unchanged %v", ia2, da2 == da)
	}
}
