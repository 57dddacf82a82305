package commands

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// The spec fixes the integer syntax as Go's strconv.ParseInt(s, 10, 64).
func checkParseInt(t *testing.T, s []byte) {
	t.Helper()
	want, err := strconv.ParseInt(string(s), 10, 64)
	got, ok := ParseInt(s)
	if ok != (err == nil) || (ok && got != want) {
		t.Errorf("ParseInt(%q) = %d, %v; strconv.ParseInt = %d, %v", s, got, ok, want, err)
	}
}

func TestParseInt(t *testing.T) {
	for _, s := range []string{
		"0", "1", "-1", "+5", "007", "-0", "+0", "-007", "1.5", " 1", "1 ", "1e3", "0x10", "", "+", "-",
		"+-1", "--1", "1_000", "١", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "18446744073709551615", "18446744073709551616", "99999999999999999999",
		"00000000000000000000000000000009223372036854775807", "-00000000000000000000009223372036854775808",
		"\x001", "1\x00", "٣", "１",
	} {
		checkParseInt(t, []byte(s))
	}
}

func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "+5", "-0", "007", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "18446744073709551616", "1e3", "", "+", "0x1", "1844674407370955161"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) { checkParseInt(t, s) })
}

func TestParseIntDoesNotAllocate(t *testing.T) {
	b := []byte("-9223372036854775808")
	if n := testing.AllocsPerRun(100, func() { ParseInt(b) }); n != 0 {
		t.Errorf("ParseInt allocates %v times", n)
	}
}

func argv(words ...string) [][]byte {
	out := make([][]byte, len(words))
	for i, w := range words {
		out[i] = []byte(w)
	}
	return out
}

// TestParseGCRAErrors: arity first (redis-cell's usage text, with the
// command's own name), then the four integers in order, the first bad one
// echoed as Redis sanitises error text, and only then the zero rate.
func TestParseGCRAErrors(t *testing.T) {
	const (
		usageThrottle = "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
		usagePeek     = "Cell error: Store error: Usage: cl.peek <key> <max_burst> <count per period> <period> [<quantity>]"
		notInt        = "Cell error: Store error: Couldn't parse as integer: "
		zero          = "Cell error: Store error: Zero rates are not supported"
	)
	tests := []struct {
		name string
		args [][]byte
		want string
	}{
		{"cl.throttle", argv("CL.THROTTLE"), usageThrottle},
		{"cl.throttle", argv("cl.throttle", "k", "1", "1"), usageThrottle},
		{"cl.throttle", argv("cl.throttle", "k", "1", "1", "1", "1", "1"), usageThrottle},
		{"cl.throttle", argv("cl.throttle", "k", "x", "y", "z", "w", "v"), usageThrottle}, // arity before integers
		{"cl.peek", argv("cl.peek", "k", "1", "1"), usagePeek},
		{"cl.peek", argv("cl.peek", "k", "1", "1", "1", "1", "1"), usagePeek},
		{"cl.throttle", argv("cl.throttle", "k", "x", "y", "0"), notInt + "x"},
		{"cl.throttle", argv("cl.throttle", "k", "1", "y", "0"), notInt + "y"},
		{"cl.throttle", argv("cl.throttle", "k", "1", "0", "z"), notInt + "z"},
		{"cl.throttle", argv("cl.throttle", "k", "1", "0", "1", "q"), notInt + "q"}, // parse error before zero rate
		{"cl.throttle", argv("cl.throttle", "k", "1", "0", "1"), zero},
		{"cl.throttle", argv("cl.throttle", "k", "1", "1", "0", "5"), zero},
		{"cl.throttle", argv("cl.throttle", "k", "1", "2000000000", "1"), zero}, // T < 1 ns
		{"cl.throttle", argv("cl.throttle", "k", "1.5", "1", "1"), notInt + "1.5"},
		{"cl.throttle", argv("cl.throttle", "k", " 1", "1", "1"), notInt + " 1"},
		{"cl.throttle", argv("cl.throttle", "k", "", "1", "1"), notInt},
		{"cl.throttle", argv("cl.throttle", "k", "9223372036854775808", "1", "1"), notInt + "9223372036854775808"},
		// Sanitising the echoed argument.
		{"cl.throttle", argv("cl.throttle", "k", "a\x00b", "1", "1"), notInt + "a"},
		{"cl.throttle", argv("cl.throttle", "k", "\r\nab\r\n", "1", "1"), notInt + "  ab"}, // sanitised on the whole message: the leading CR LF become spaces,
		{"cl.throttle", argv("cl.throttle", "k", "a\rb\nc", "1", "1"), notInt + "a b c"},
		{"cl.throttle", argv("cl.throttle", "k", "a\r\nb", "1", "1"), notInt + "a  b"},
		{"cl.throttle", argv("cl.throttle", "k", "\n", "1", "1"), notInt},
		{"cl.throttle", argv("cl.throttle", "k", "\r\n\x00\r\nx", "1", "1"), notInt},
		{"cl.throttle", argv("cl.throttle", "k", "\xff\xfe", "1", "1"), notInt + "\xff\xfe"},
		{"cl.throttle", argv("cl.throttle", "k", "\xff\r1", "1", "1"), notInt + "\xff 1"}, // non-UTF-8 bytes echoed as they are
	}
	for _, tt := range tests {
		key, _, got := ParseGCRA(tt.name, tt.args)
		if got != tt.want {
			t.Errorf("ParseGCRA(%q, %q) = %q, want %q", tt.name, tt.args, got, tt.want)
		}
		if key != nil {
			t.Errorf("ParseGCRA(%q, %q) returned key %q with an error", tt.name, tt.args, key)
		}
	}
}

func TestParseGCRAValues(t *testing.T) {
	tests := []struct {
		args []string
		want gcra.Params
	}{
		{[]string{"user123", "15", "30", "60"}, gcra.Params{Interval: 2e9, Limit: 16, Quantity: 1}},
		{[]string{"k", "0", "1", "10", "0"}, gcra.Params{Interval: 10e9, Limit: 1, Quantity: 0}},
		{[]string{"k", "+5", "007", "-0010", "-3"}, gcra.Params{Interval: -1428571428, Limit: 6, Quantity: -3}},
		{[]string{"k", "-1", "3", "1"}, gcra.Params{Interval: 333333333, Limit: 0, Quantity: 1}},
		{[]string{"k", "9223372036854775807", "1", "1"}, gcra.Params{Interval: 1e9, Limit: -9223372036854775808, Quantity: 1}},
	}
	for _, tt := range tests {
		args := argv(append([]string{"cl.throttle"}, tt.args...)...)
		key, p, e := ParseGCRA("cl.throttle", args)
		if e != "" || p != tt.want || !bytes.Equal(key, args[1]) {
			t.Errorf("ParseGCRA(%q) = %q, %+v, %q; want %+v", tt.args, key, p, e, tt.want)
		}
	}
	// The key is binary-safe and aliases the argument (no copy).
	args := argv("cl.throttle", "a\x00\r\n\xff", "1", "1", "1")
	if key, _, _ := ParseGCRA("cl.throttle", args); &key[0] != &args[1][0] {
		t.Errorf("the key does not alias its argument")
	}
}

func TestParseWriteAndRead(t *testing.T) {
	var op request.Request
	// The GCRA parameters travel as Args: Interval, Limit, Quantity.
	if e := ParseWrite(byName["cl.throttle"], argv("CL.THROTTLE", "k", "1", "1", "1", "2"), &op); e != "" ||
		op.Code != request.Throttle || string(op.Key) != "k" || op.NArgs != 3 || op.Args != [request.MaxArgs]int64{1e9, 2, 2} {
		t.Errorf("CL.THROTTLE: %q %+v", e, op)
	}
	if e := ParseWrite(byName["del"], argv("DEL", "a", "b"), &op); e != "" || op.Code != request.Del || len(op.Keys) != 2 || op.NArgs != 0 {
		t.Errorf("DEL: %q %+v", e, op)
	}
	for _, args := range [][]string{{"FLUSHALL"}, {"flushall", "ASYNC"}, {"FLUSHDB", "sync"}} {
		if e := ParseWrite(byName[string(Lower(nil, []byte(args[0])))], argv(args...), &op); e != "" || op.Code != request.FlushAll {
			t.Errorf("%q: %q %+v", args, e, op)
		}
	}
	for _, args := range [][]string{{"FLUSHALL", "now"}, {"FLUSHALL", "async", "sync"}} {
		if e := ParseWrite(byName["flushall"], argv(args...), &op); e != ErrSyntax || op.Code != 0 {
			t.Errorf("%q: %q %+v, want %q and no request", args, e, op, ErrSyntax)
		}
	}
	var r request.Request
	if e := ParseRead(byName["cl.peek"], argv("CL.PEEK", "k", "15", "30", "60"), &r); e != "" || r.Code != request.Peek || string(r.Key) != "k" ||
		r.NArgs != 3 || r.Args != [request.MaxArgs]int64{2e9, 16, 1} {
		t.Errorf("CL.PEEK: %q %+v", e, r)
	}
	if e := ParseRead(byName["cl.peek"], argv("CL.PEEK", "k", "1", "1"), &r); e != CellUsage("cl.peek") {
		t.Errorf("CL.PEEK usage: %q", e)
	}
	for name, code := range map[string]request.Code{"exists": request.Exists, "pttl": request.PTTL, "ttl": request.TTL, "type": request.Type, "dbsize": request.DBSize} {
		n := byName[name].Arity
		if n < 0 {
			n = -n // at least that many
		}
		args := argv(name, "k", "j")[:n]
		if e := ParseRead(byName[name], args, &r); e != "" || r.Code != code || r.Code.IsWrite() || r.NArgs != 0 {
			t.Errorf("%s: %q %+v", name, e, r)
		}
	}
}

// TestEveryKeyspaceCommandParses: every Read/Write command of the table has
// a case in ParseRead/ParseWrite (the fallback answers an internal error).
func TestEveryKeyspaceCommandParses(t *testing.T) {
	for _, s := range All() {
		args := argv(s.Name, "k", "1", "1", "1")
		if s.Arity > 0 {
			args = args[:s.Arity]
		}
		var e string
		switch s.Class {
		case Write:
			var r request.Request
			if e = ParseWrite(s, args, &r); e == "" && !r.Code.IsWrite() {
				t.Errorf("%s (a write) parses to read code %d", s.Name, r.Code)
			}
		case Read:
			var r request.Request
			if e = ParseRead(s, args, &r); e == "" && r.Code.IsWrite() {
				t.Errorf("%s (a read) parses to write code %d", s.Name, r.Code)
			}
		default:
			continue
		}
		if e == ErrInternal {
			t.Errorf("%s (class %d) has no case in ParseWrite/ParseRead", s.Name, s.Class)
		}
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	args := argv("CL.THROTTLE", "some:key", "15", "30", "60", "1")
	var op request.Request
	if n := testing.AllocsPerRun(100, func() { op, _ = ParseThrottle(args) }); n != 0 {
		t.Errorf("ParseThrottle allocates %v times", n)
	}
	if op.Code != request.Throttle {
		t.Errorf("ParseThrottle: %+v", op)
	}
	for _, words := range [][]string{
		{"TB.TAKE", "k", "10", "1", "1000", "COST", "2", "INTERVAL"},
		{"SL.HIT", "k", "10", "1000", "MINGAP", "5", "DENIED", "COUNT"},
		{"SL.PEEK", "k", "10", "1000", "MINGAP", "5"},
	} {
		args := argv(words...)
		spec := byName[strings.ToLower(words[0])]
		if n := testing.AllocsPerRun(100, func() {
			if spec.Class == Write {
				ParseWrite(spec, args, &op)
			} else {
				ParseRead(spec, args, &op)
			}
		}); n != 0 {
			t.Errorf("%s allocates %v times", words[0], n)
		}
	}
	var scratch []byte
	name := []byte("CL.THROTTLE")
	Lookup(name, &scratch)
	if n := testing.AllocsPerRun(100, func() { Lookup(name, &scratch) }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

// TestEqualFoldASCIIOnly: only A–Z fold, as Redis's strcasecmp in the C
// locale; a byte that differs from a letter by 0x20 ('@' and '`', '[' and
// '{', Latin-1 letters) is not its case pair, and Unicode look-alikes that
// strings.EqualFold would accept never match.
func TestEqualFoldASCIIOnly(t *testing.T) {
	for a := 0; a < 256; a++ {
		for w := 0; w < 256; w++ {
			if 'A' <= w && w <= 'Z' {
				continue // w is a lower-case word by contract
			}
			want := a == w || ('A' <= a && a <= 'Z' && a+32 == w)
			if got := EqualFold([]byte{byte(a)}, string([]byte{byte(w)})); got != want {
				t.Fatalf("EqualFold(%q, %q) = %v, want %v", byte(a), byte(w), got, want)
			}
		}
	}
	for _, tt := range []struct {
		b, w string
		want bool
	}{
		{"SETNAME", "setname", true},
		{"SetName", "setname", true},
		{"ſetname", "setname", false}, // U+017F folds to s in Unicode
		{"\u212Aey", "key", false},    // Kelvin sign
		{"setnam", "setname", false},
		{"setname\x00", "setname", false},
		{"", "", true},
	} {
		if got := EqualFold([]byte(tt.b), tt.w); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tt.b, tt.w, got, tt.want)
		}
	}
	for _, name := range []string{"exiſts", "PİNG", "ping\x00", "ping ", "\u212Aeys", "cl.thrOttle\xff"} {
		var scratch []byte
		if s := Lookup([]byte(name), &scratch); s != nil {
			t.Errorf("Lookup(%q) = %s, want nil", name, s.Name)
		}
	}
	var scratch []byte
	if s := Lookup([]byte("Cl.ThRoTtLe"), &scratch); s == nil || s.Name != "cl.throttle" {
		t.Errorf("Lookup(Cl.ThRoTtLe) = %v", s)
	}
}
