package fsm

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// listValue encodes elements as apply stores them.
func listValue(elems ...string) []byte {
	var v []byte
	for _, e := range elems {
		v = appendListElem(v, []byte(e))
	}
	return v
}

// TestListSnapshotRefusesMalformedValues: restore refuses a list record
// apply could not have written (a count that is not the elements', a
// length suffix that does not mirror its prefix, a non-canonical length,
// bytes left over, a stray B, no value), and accepts the ones apply writes.
func TestListSnapshotRefusesMalformedValues(t *testing.T) {
	long := strings.Repeat("z", 20000) // a three-byte length
	good := listValue("ab", "", long)
	rec := func(a, b int64, v []byte) []byte {
		return encodeStream(5, []streamRecord{{key: []byte("k"), st: shard.State{Kind: listKind, Expire: noExpiry, A: a, B: b, Val: v}}})
	}
	suffixSwapped := bytes.Clone(good)
	n := len(suffixSwapped)
	suffixSwapped[n-1], suffixSwapped[n-3] = suffixSwapped[n-3], suffixSwapped[n-1]
	for name, bad := range map[string][]byte{
		"count too small":   rec(2, 0, good),
		"count too large":   rec(4, 0, good),
		"count 0, no value": rec(0, 0, nil),
		"suffix differs":    rec(1, 0, []byte("\x02ab\x03")),
		"suffix reversed":   rec(3, 0, suffixSwapped),
		"suffix missing":    rec(1, 0, []byte("\x02ab")),
		"length past end":   rec(1, 0, []byte("\x05ab\x05")),
		"non-canonical":     rec(1, 0, []byte("\x82\x00ab\x00\x82")),
		"trailing byte":     rec(1, 0, append(listValue("ab"), 0)),
		"b set":             encodeStream(5, []streamRecord{{key: []byte("k"), st: shard.State{Kind: listKind, Expire: 1e18, A: 3, B: 7, Val: good}}}),
	} {
		f := quietFSM(1)
		if err := f.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
	for name, ok := range map[string][]byte{
		"three elements": rec(3, 0, good),
		"wide expiry":    rec(3, 9223372036854775807, good),
	} {
		f := quietFSM(1)
		if err := f.Restore(io.NopCloser(bytes.NewReader(ok))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestListElementWalk: listElemOffset from either end agrees with a forward
// walk for every position, and listElemBefore reads back what appendListElem wrote
// at every length prefix width.
func TestListElementWalk(t *testing.T) {
	elems := []string{"", "a", strings.Repeat("b", 127), strings.Repeat("c", 128), strings.Repeat("d", 16383), strings.Repeat("e", 16384), "f"}
	v := listValue(elems...)
	count := int64(len(elems))
	off := 0
	for i := int64(0); i <= count; i++ {
		if got := listElemOffset(v, count, i); got != off {
			t.Fatalf("listElemOffset(%d) = %d, want %d", i, got, off)
		}
		if i == count {
			break
		}
		e, next := listElemAt(v, off)
		if string(e) != elems[i] {
			t.Fatalf("element %d: %d bytes", i, len(e))
		}
		back, start := listElemBefore(v, next)
		if start != off || string(back) != elems[i] {
			t.Fatalf("element %d read backwards: start %d, want %d", i, start, off)
		}
		off = next
	}
	if err := listCheckRecord(nil, shard.State{Kind: listKind, Expire: noExpiry, A: count, Val: v}, snapshotVersion); err != nil {
		t.Fatal(err)
	}
}

// listOp is a random list command on the generator's keys (which other
// families' ops share, so WRONGTYPE and replacement by SET happen too), for
// TestReplicasAreIdentical's log.
func (g *opGen) listOp() request.Request {
	k := string(g.key())
	elem := []string{"a", "b", "", "1700000000123", strings.Repeat("x", 200)}[g.rng.IntN(5)]
	idx := func() string { return strconv.Itoa(g.rng.IntN(9) - 4) }
	var line []string
	switch g.rng.IntN(9) {
	case 0, 1:
		line = []string{[]string{"LPUSH", "RPUSH", "LPUSHX", "RPUSHX"}[g.rng.IntN(4)], k, elem, "b"}
	case 2:
		line = []string{[]string{"LPOP", "RPOP"}[g.rng.IntN(2)], k}
	case 3:
		line = []string{[]string{"LPOP", "RPOP"}[g.rng.IntN(2)], k, strconv.Itoa(g.rng.IntN(4))}
	case 4:
		line = []string{"LTRIM", k, idx(), idx()}
	case 5:
		line = []string{"LREM", k, idx(), elem}
	case 6:
		line = []string{"LSET", k, idx(), elem}
	case 7:
		line = []string{"LRANGE", k, idx(), idx()}
	default:
		line = []string{"LINDEX", k, idx()}
	}
	var scratch []byte
	args := make([][]byte, len(line))
	for i, a := range line {
		args[i] = []byte(a)
	}
	r, text := commands.Lookup(args[0], &scratch).Parse(args)
	if text != "" {
		panic(fmt.Sprintf("%q: %s", line, text)) // a bug in this generator
	}
	return r
}
