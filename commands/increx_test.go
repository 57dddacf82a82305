package commands

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// TestParseIncrEx: INCREX's options in any order and case, repeats (the last
// counts, as SET's EX EX), conflicts and missing values (syntax errors),
// then the numbers in the command's order; BYFLOAT's floats go to the state
// machine with the time's error to answer after them.
func TestParseIncrEx(t *testing.T) {
	const (
		notInt = "ERR value is not an integer or out of range"
		badExp = "ERR invalid expire time in 'increx' command"
		bounds = "ERR LBOUND must be less than or equal to UBOUND"
	)
	F := request.IncrExFloat
	L, U, S := request.IncrExLBound, request.IncrExUBound, request.IncrExSaturate
	EX, PX, EXAT, PXAT := request.IncrExEX, request.IncrExPX, request.IncrExEXAT, request.IncrExPXAT
	P, ENX := request.IncrExPersist, request.IncrExENX
	for _, tt := range []struct {
		line string
		err  string
		args []int64  // flags, incr, lbound, ubound, ms, error code
		keys []string // BYFLOAT's floats
	}{
		// Defaults and every option.
		{line: "INCREX k", args: []int64{0, 1, 0, 0, 0, 0}},
		{line: "INCREX k BYINT 5", args: []int64{0, 5, 0, 0, 0, 0}},
		{line: "increx k byint -5 lbound -10 ubound 10 saturate", args: []int64{L | U | S, -5, -10, 10, 0, 0}},
		{line: "INCREX k UBOUND 100 BYINT 1 ENX EX 60", args: []int64{U | EX | ENX, 1, 0, 100, 60000, 0}},
		{line: "INCREX k BYINT 1 UBOUND 100 EX 60 ENX", args: []int64{U | EX | ENX, 1, 0, 100, 60000, 0}},
		{line: "INCREX k PX 1500", args: []int64{PX, 1, 0, 0, 1500, 0}},
		{line: "INCREX k EXAT 1700000000", args: []int64{EXAT, 1, 0, 0, 1700000000000, 0}},
		{line: "INCREX k PXAT 1700000000123 ENX", args: []int64{PXAT | ENX, 1, 0, 0, 1700000000123, 0}},
		{line: "INCREX k PERSIST", args: []int64{P, 1, 0, 0, 0, 0}},
		{line: "INCREX k LBOUND 3 UBOUND 3", args: []int64{L | U, 1, 3, 3, 0, 0}},
		{line: "INCREX k BYFLOAT 1.5", args: []int64{F, 0, 0, 0, 0, 0}, keys: []string{"1.5", "", ""}},
		{line: "INCREX k LBOUND -1e3 BYFLOAT 0x10 UBOUND inf SATURATE PX 10", args: []int64{F | L | U | S | PX, 0, 0, 0, 10, 0}, keys: []string{"0x10", "-1e3", "inf"}},
		// Repeats: the last value counts.
		{line: "INCREX k BYINT 1 BYINT 2", args: []int64{0, 2, 0, 0, 0, 0}},
		{line: "INCREX k BYFLOAT 1 BYFLOAT 2", args: []int64{F, 0, 0, 0, 0, 0}, keys: []string{"2", "", ""}},
		{line: "INCREX k UBOUND 1 UBOUND 9 LBOUND 5 LBOUND 0", args: []int64{L | U, 1, 0, 9, 0, 0}},
		{line: "INCREX k EX 1 EX 2 SATURATE SATURATE ENX ENX", args: []int64{EX | S | ENX, 1, 0, 0, 2000, 0}},
		{line: "INCREX k PERSIST PERSIST", args: []int64{P, 1, 0, 0, 0, 0}},
		// Conflicts and unknown options: syntax errors.
		{line: "INCREX k BYINT 1 BYFLOAT 1", err: ErrSyntax},
		{line: "INCREX k BYFLOAT 1 BYINT 1", err: ErrSyntax},
		{line: "INCREX k EX 1 PX 1", err: ErrSyntax},
		{line: "INCREX k EXAT 1 PXAT 1", err: ErrSyntax},
		{line: "INCREX k EX 1 PERSIST", err: ErrSyntax},
		{line: "INCREX k PERSIST PX 1", err: ErrSyntax},
		{line: "INCREX k ENX", err: ErrSyntax},
		{line: "INCREX k ENX PERSIST", err: ErrSyntax},
		{line: "INCREX k PERSIST ENX", err: ErrSyntax},
		{line: "INCREX k KEEPTTL", err: ErrSyntax},
		{line: "INCREX k NX", err: ErrSyntax},
		{line: "INCREX k 5", err: ErrSyntax},
		// Missing values: syntax errors, before any number is read.
		{line: "INCREX k BYINT", err: ErrSyntax},
		{line: "INCREX k BYFLOAT", err: ErrSyntax},
		{line: "INCREX k LBOUND", err: ErrSyntax},
		{line: "INCREX k UBOUND", err: ErrSyntax},
		{line: "INCREX k EX", err: ErrSyntax},
		{line: "INCREX k PXAT", err: ErrSyntax},
		{line: "INCREX k BYINT x EX", err: ErrSyntax},
		// The numbers in order: increment, bounds, their order, the time.
		{line: "INCREX k BYINT 1.5", err: notInt},
		{line: "INCREX k BYINT +1", err: notInt},
		{line: "INCREX k BYINT 1.5 LBOUND 5 UBOUND 4 EX 0", err: notInt},
		{line: "INCREX k LBOUND x UBOUND 4", err: notInt},
		{line: "INCREX k LBOUND 1.5", err: notInt},
		{line: "INCREX k UBOUND 01", err: notInt},
		{line: "INCREX k LBOUND 5 UBOUND 4 EX 0", err: bounds},
		{line: "INCREX k EX abc", err: notInt},
		{line: "INCREX k EX 0", err: badExp},
		{line: "INCREX k PX -1", err: badExp},
		{line: "INCREX k EX 9223372036854775807", err: badExp},
		{line: "INCREX k EXAT 9223372036854775807", err: badExp},
		{line: "INCREX k PXAT 0", err: badExp},
		// BYFLOAT: the time's error travels to the state machine.
		{line: "INCREX k BYFLOAT x EX 0", args: []int64{F | EX, 0, 0, 0, 0, int64(request.ErrIncrExExpire)}, keys: []string{"x", "", ""}},
		{line: "INCREX k BYFLOAT 1 PX y", args: []int64{F | PX, 0, 0, 0, 0, int64(request.ErrNotInteger)}, keys: []string{"1", "", ""}},
	} {
		t.Run(tt.line, func(t *testing.T) {
			args := argv(strings.Fields(tt.line)...)
			var scratch []byte
			s := Lookup(args[0], &scratch)
			if !s.CheckArity(len(args)) {
				t.Fatalf("arity refused")
			}
			var r request.Request
			e := ParseWrite(s, args, &r)
			if e != tt.err {
				t.Fatalf("error %q, want %q", e, tt.err)
			}
			if e != "" {
				return
			}
			if r.Code != request.IncrEx || string(r.Key) != "k" || r.NArgs != 6 {
				t.Fatalf("request %+v", r)
			}
			if got := fmt.Sprint(r.Args[:6]); got != fmt.Sprint(tt.args) {
				t.Errorf("args %s, want %v", got, tt.args)
			}
			var keys []string
			for _, k := range r.Keys {
				keys = append(keys, string(k))
			}
			if fmt.Sprintf("%q", keys) != fmt.Sprintf("%q", tt.keys) {
				t.Errorf("floats %q, want %q", keys, tt.keys)
			}
		})
	}
	var scratch []byte
	if s := Lookup([]byte("INCREX"), &scratch); s.CheckArity(1) || !s.CheckArity(2) {
		t.Errorf("INCREX's arity: at least the key")
	}
}
