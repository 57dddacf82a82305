package commands

import (
	"bytes"
	"testing"

	"github.com/redcell/redcell/request"
)

// The sizes below are worked out by hand from the request encoding
// (request/codec.go) rather than with request.EncodedLen, so these tests also
// check that function against the format; request's own tests check it
// against the encoder.

// throttleArgs is CL.THROTTLE with a key of keyLen bytes and "1 1 1": T = 1e9
// (zig-zag 2e9, 5 varint bytes), limit 2 and quantity 1 (one byte each). The
// request takes 1 (code) + 1 (key count) + 4 (uvarint of a length in
// [2^21, 2^28)) + keyLen + 1 (argument count) + 7.
func throttleArgs(keyLen int) [][]byte {
	return [][]byte{[]byte("CL.THROTTLE"), bytes.Repeat([]byte{'k'}, keyLen), []byte("1"), []byte("1"), []byte("1")}
}

const throttleOverhead = 1 + 1 + 4 + 1 + 5 + 1 + 1

// delArgs is name with 131072 keys whose request takes exactly size bytes:
// 1 (code) + 3 (uvarint 131072) + 131071 keys of 127 bytes (128 each with
// their length byte) + one last key that makes up the rest + 1 (argument
// count, 0).
func delArgs(name string, size int) [][]byte {
	const n, keyLen = 131072, 127
	args := make([][]byte, 0, n+1)
	args = append(args, []byte(name))
	key := bytes.Repeat([]byte{'d'}, keyLen)
	for i := 0; i < n-1; i++ {
		args = append(args, key)
	}
	last := size - (1 + 3 + (n-1)*(1+keyLen)) - 1 - 1
	return append(args, bytes.Repeat([]byte{'e'}, last))
}

// TestWriteRequestSizeLimit: a write request that takes exactly
// MaxRequestLogBytes in the log is accepted; one byte more is answered with
// the exact error and leaves no op behind.
func TestWriteRequestSizeLimit(t *testing.T) {
	over := "ERR request too large for the replicated log: 16777217 bytes, the limit is 16777216"
	tests := []struct {
		name      string
		spec      string
		atLimit   [][]byte
		overLimit [][]byte
	}{
		{"CL.THROTTLE key size", "cl.throttle", throttleArgs(MaxRequestLogBytes - throttleOverhead), throttleArgs(MaxRequestLogBytes - throttleOverhead + 1)},
		{"DEL of many keys", "del", delArgs("DEL", MaxRequestLogBytes), delArgs("DEL", MaxRequestLogBytes+1)},
		{"UNLINK of many keys", "unlink", delArgs("UNLINK", MaxRequestLogBytes), delArgs("UNLINK", MaxRequestLogBytes+1)},
	}
	for _, tt := range tests {
		var op request.Request
		if e := ParseWrite(byName[tt.spec], tt.atLimit, &op); e != "" {
			t.Errorf("%s at the limit: %q", tt.name, e)
		}
		if n := request.EncodedLen(&op); n != MaxRequestLogBytes {
			t.Errorf("%s at the limit: the request takes %d bytes, the test meant %d", tt.name, n, MaxRequestLogBytes)
		}
		if n := len(request.Append(nil, &op)); n != MaxRequestLogBytes {
			t.Errorf("%s at the limit: encoded in %d bytes, the test meant %d", tt.name, n, MaxRequestLogBytes)
		}
		if e := ParseWrite(byName[tt.spec], tt.overLimit, &op); e != over {
			t.Errorf("%s one byte over: %q, want %q", tt.name, e, over)
		}
		if op.Code != 0 || op.Key != nil || op.Keys != nil || op.NArgs != 0 {
			t.Errorf("%s one byte over: the refused request left code %v, %d keys, %d arguments", tt.name, op.Code, len(op.Keys), op.NArgs)
		}
	}
}

// TestDelOfAMillionKeysIsAccepted: the DEL that used to poison the log
// (1,048,577 keys, one more than the decoder's old cap) is far under the
// limit and parses.
func TestDelOfAMillionKeysIsAccepted(t *testing.T) {
	args := make([][]byte, 1+1<<20+1)
	args[0] = []byte("DEL")
	for i := 1; i < len(args); i++ {
		args[i] = []byte{byte(i)}
	}
	var op request.Request
	if e := ParseWrite(byName["del"], args, &op); e != "" || len(op.Keys) != 1<<20+1 {
		t.Fatalf("DEL of 1,048,577 keys: %q, %d keys", e, len(op.Keys))
	}
	if n, want := request.EncodedLen(&op), 1+3+2*(1<<20+1)+1; n != want {
		t.Errorf("EncodedLen = %d, want %d", n, want)
	}
}

func TestRequestTooLargeText(t *testing.T) {
	if got, want := RequestTooLarge(17000000), "ERR request too large for the replicated log: 17000000 bytes, the limit is 16777216"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
