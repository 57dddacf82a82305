package fsm_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/request"
)

// The list family in the state machine: every command against a model (a
// Go slice per key, Redis 7.0's rules written out plainly) over random
// operations with elements whose length prefixes take one to three bytes,
// so that walking from either end and the value's in-place moves are
// exercised; the rules redis-server cannot check (WATCH-visible no-ops,
// expiry at the entry's now, snapshots and their refusals). The systemtest
// compares replies with redis-server byte for byte.

// listReply renders a result: an integer, +text, $"bulk", (nil), *[…],
// *(nil) or -error.
func listReply(res request.Result, text string) string {
	if text != "" {
		return "-" + text
	}
	switch res.Kind {
	case request.KindInt:
		return strconv.FormatInt(res.Ints[0], 10)
	case request.KindOK:
		return "+OK"
	case request.KindType:
		return "+" + request.TypeName(res.Ints[0])
	case request.KindBulk:
		return "$" + strconv.Quote(string(res.Data))
	case request.KindNil:
		return "(nil)"
	case request.KindNilArray:
		return "*(nil)"
	case request.KindArray:
		var parts []string
		request.Items(res.Data, func(item []byte) { parts = append(parts, strconv.Quote(string(item))) })
		return "*[" + strings.Join(parts, " ") + "]"
	case request.KindError:
		return "-" + commands.ResultErrText(res.Err)
	}
	return fmt.Sprintf("kind %d", res.Kind)
}

func (e *engine) list(t testing.TB, now int64, args ...string) string {
	t.Helper()
	_, res, text := e.exec(t, now, args)
	return listReply(res, text)
}

// listModel is Redis 7.0's list commands on Go slices.
type listModel map[string][]string

const listWrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value"

func listQuoteAll(s []string) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = strconv.Quote(x)
	}
	return "*[" + strings.Join(parts, " ") + "]"
}

// listClamp is Redis's LRANGE/LTRIM range rule.
func listClamp(start, stop int64, n int) (int, int, bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	start = max(start, 0)
	if start > stop || start >= ln {
		return 0, 0, false
	}
	return int(start), int(min(stop, ln-1)), true
}

func (m listModel) apply(args []string) string {
	key := args[1]
	l, ok := m[key]
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	set := func(nl []string) {
		if len(nl) == 0 {
			delete(m, key)
		} else {
			m[key] = nl
		}
	}
	switch args[0] {
	case "LPUSH", "RPUSH", "LPUSHX", "RPUSHX":
		if !ok && strings.HasSuffix(args[0], "X") {
			return "0"
		}
		for _, e := range args[2:] {
			if args[0][0] == 'L' {
				l = append([]string{e}, l...)
			} else {
				l = append(l, e)
			}
		}
		set(l)
		return strconv.Itoa(len(l))
	case "LPOP", "RPOP":
		if !ok {
			if len(args) == 3 {
				return "*(nil)"
			}
			return "(nil)"
		}
		if len(args) == 2 {
			if args[0] == "LPOP" {
				set(l[1:])
				return "$" + strconv.Quote(l[0])
			}
			set(l[:len(l)-1])
			return "$" + strconv.Quote(l[len(l)-1])
		}
		n := min(int(num(args[2])), len(l))
		if args[0] == "LPOP" {
			out := slices.Clone(l[:n])
			set(l[n:])
			return listQuoteAll(out)
		}
		out := slices.Clone(l[len(l)-n:])
		slices.Reverse(out)
		set(l[:len(l)-n])
		return listQuoteAll(out)
	case "LLEN":
		return strconv.Itoa(len(l))
	case "LINDEX":
		if !ok {
			return "(nil)"
		}
		i := num(args[2])
		if i < 0 {
			i += int64(len(l))
		}
		if i < 0 || i >= int64(len(l)) {
			return "(nil)"
		}
		return "$" + strconv.Quote(l[i])
	case "LSET":
		if !ok {
			return "-ERR no such key"
		}
		i := num(args[2])
		if i < 0 {
			i += int64(len(l))
		}
		if i < 0 || i >= int64(len(l)) {
			return "-ERR index out of range"
		}
		l[i] = args[3]
		return "+OK"
	case "LRANGE":
		from, to, ok := listClamp(num(args[2]), num(args[3]), len(l))
		if !ok {
			return "*[]"
		}
		return listQuoteAll(l[from : to+1])
	case "LTRIM":
		from, to, ok := listClamp(num(args[2]), num(args[3]), len(l))
		if !ok {
			set(nil)
		} else {
			set(slices.Clone(l[from : to+1]))
		}
		return "+OK"
	case "LREM":
		count, elem := num(args[2]), args[3]
		var kept []string
		removed := int64(0)
		limit := count
		if limit < 0 {
			limit = -limit // MinInt64 stays negative: no limit, as in Redis
		}
		if count < 0 {
			slices.Reverse(l)
		}
		for _, x := range l {
			if x == elem && (count == 0 || limit < 0 || removed < limit) {
				removed++
			} else {
				kept = append(kept, x)
			}
		}
		if count < 0 {
			slices.Reverse(kept)
		}
		set(kept)
		return strconv.FormatInt(removed, 10)
	}
	panic(args[0])
}

// randomListCommand draws a list command on one of a few keys, with
// indexes around the lists' ends and elements of 0 to 20,000 bytes.
func randomListCommand(r *rand.Rand, m listModel) []string {
	key := []string{"a", "b", "c"}[r.IntN(3)]
	n := len(m[key])
	idx := func() string {
		switch r.IntN(6) {
		case 0:
			return strconv.Itoa(r.IntN(n + 3))
		case 1:
			return strconv.Itoa(-1 - r.IntN(n+3))
		case 2:
			return "0"
		case 3:
			return "-1"
		case 4:
			return []string{"9223372036854775807", "-9223372036854775808"}[r.IntN(2)]
		}
		return strconv.Itoa(r.IntN(2*n+1) - n)
	}
	elem := func() string {
		switch r.IntN(20) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("x", 127+r.IntN(3))
		case 2:
			return strings.Repeat("y", 16383+r.IntN(3)) // three-byte lengths
		}
		return []string{"a", "b", "c", "hello", "1700000000123"}[r.IntN(5)]
	}
	switch r.IntN(12) {
	case 0, 1:
		args := []string{[]string{"LPUSH", "RPUSH", "LPUSHX", "RPUSHX"}[r.IntN(4)], key}
		for range 1 + r.IntN(4) {
			args = append(args, elem())
		}
		return args
	case 2:
		return []string{[]string{"LPOP", "RPOP"}[r.IntN(2)], key}
	case 3:
		return []string{[]string{"LPOP", "RPOP"}[r.IntN(2)], key, strconv.Itoa(r.IntN(n + 3))}
	case 4:
		return []string{"LLEN", key}
	case 5, 6:
		return []string{"LINDEX", key, idx()}
	case 7:
		return []string{"LSET", key, idx(), elem()}
	case 8, 9:
		return []string{"LRANGE", key, idx(), idx()}
	case 10:
		return []string{"LTRIM", key, idx(), idx()}
	}
	return []string{"LREM", key, []string{"0", "1", "-1", "2", "-2", "-9223372036854775808"}[r.IntN(6)], elem()}
}

// TestListsAgainstModel: random list commands answer as the model does,
// and every 50 steps the state survives a snapshot round trip into another
// stripe count byte for byte.
func TestListsAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, seed))
		m := listModel{}
		e := newEngine(1 + int(seed%2)*63)
		for step := range 1500 {
			args := randomListCommand(r, m)
			want := m.apply(args)
			if got := e.list(t, t0, args...); got != want {
				t.Fatalf("seed %d step %d %.200q: got %.300s, want %.300s", seed, step, args, got, want)
			}
			if step%50 == 49 {
				for key, l := range m {
					if got := e.list(t, t0, "LLEN", key); got != strconv.Itoa(len(l)) {
						t.Fatalf("seed %d step %d: LLEN %s %s, want %d", seed, step, key, got, len(l))
					}
				}
				other := newEngine(4)
				restoreFrom(t, other, e)
				if snapshotOf(t, other.f) != snapshotOf(t, e.f) {
					t.Fatalf("seed %d step %d: the restored snapshot differs", seed, step)
				}
				e = other
			}
		}
	}
}

// TestListCommandEdges: the replies whose kind or order matters (nil and
// nil arrays, count 0, the index errors after the lookup), WRONGTYPE both
// ways, and an emptied list deleted.
func TestListCommandEdges(t *testing.T) {
	e := newEngine(4)
	for i, s := range []struct{ line, want string }{
		{"LPOP l", "(nil)"},
		{"LPOP l 0", "*(nil)"},
		{"RPOP l 3", "*(nil)"},
		{"LINDEX l abc", "(nil)"},
		{"LSET l abc v", "-ERR no such key"},
		{"LRANGE l 0 -1", "*[]"},
		{"LTRIM l 0 -1", "+OK"},
		{"LREM l 0 a", "0"},
		{"LLEN l", "0"},
		{"RPUSHX l a", "0"},
		{"EXISTS l", "0"},
		{"RPUSH l a b c d", "4"},
		{"TYPE l", "+list"},
		{"LPOP l 0", "*[]"},
		{"LINDEX l abc", "-ERR value is not an integer or out of range"},
		{"LSET l abc v", "-ERR value is not an integer or out of range"},
		{"LSET l 4 v", "-ERR index out of range"},
		{"LSET l -5 v", "-ERR index out of range"},
		{"RPOP l 3", `*["d" "c" "b"]`},
		{"LPUSHX l z", "2"},
		{"LPOP l 5", `*["z" "a"]`},
		{"EXISTS l", "0"},
		{"LPOP l -1", "-ERR value is out of range, must be positive"},
		{"LPOP l x", "-ERR value is out of range, must be positive"},
		{"LPOP l 1 2", "-ERR wrong number of arguments for 'lpop' command"},
		{"LRANGE l x 1", "-ERR value is not an integer or out of range"},
		{"LTRIM l 0 01", "-ERR value is not an integer or out of range"},
		{"LREM l +1 a", "-ERR value is not an integer or out of range"},
		{"SET s v", "+OK"},
		{"LPUSH s a", listWrongType},
		{"LPUSHX s a", listWrongType},
		{"LPOP s 0", listWrongType},
		{"LINDEX s abc", listWrongType},
		{"LSET s abc v", listWrongType},
		{"LLEN s", listWrongType},
		{"LRANGE s 0 -1", listWrongType},
		{"LTRIM s 0 -1", listWrongType},
		{"LREM s 0 a", listWrongType},
		{"RPUSH l a", "1"},
		{"GET l", listWrongType},
		{"INCR l", listWrongType},
		{"MGET l", `+[(nil)]`},
		{"LTRIM l 1 0", "+OK"},
		{"EXISTS l", "0"},
		{"CL.THROTTLE c 5 1 60", ""},
		{"LPUSH c a", listWrongType},
		{"RPUSH l a", "1"},
		{"CL.THROTTLE l 5 1 60", listWrongType},
		{"SET l v", "+OK"},
		{"TYPE l", "+string"},
	} {
		var got string
		if strings.HasPrefix(s.line, "GET ") || strings.HasPrefix(s.line, "INCR ") || strings.HasPrefix(s.line, "MGET ") || strings.HasPrefix(s.line, "SET ") {
			got = e.line(t, t0, s.line)
		} else if strings.HasPrefix(s.line, "CL.") {
			if got = e.line(t, t0, s.line); s.want == "" {
				continue
			}
		} else {
			got = e.list(t, t0, strings.Fields(s.line)...)
		}
		if got != s.want {
			t.Errorf("step %d, %s: %s, want %s", i, s.line, got, s.want)
		}
	}
}

// TestListNoOpsChangeNothing: commands that change nothing (a refused
// write, LREM without a match, LPOP's count 0, LPUSHX of a missing key, an
// LTRIM or LSET that keeps the same bytes) leave the state and the expiry
// as they were. (Which of them return shard.Keep, for WATCH, is written in
// lists.go: LTRIM and LSET of a live list put it back as Redis 7.0 signals
// them modified.)
func TestListNoOpsChangeNothing(t *testing.T) {
	e := newEngine(1)
	e.list(t, t0, "RPUSH", "l", "a", "b")
	e.list(t, t0, "EXPIRE", "l", "100")
	before := snapshotOf(t, e.f)
	for _, line := range []string{"LREM l 0 z", "LPUSHX nokey a", "LPOP l 0", "LSET l 5 x", "LSET l abc x", "LPUSH s", "LTRIM nokey 0 1"} {
		e.list(t, t0, strings.Fields(line)...)
		if after := snapshotOf(t, e.f); after != before {
			t.Errorf("%s changed the state or its change marker", line)
		}
	}
	// LTRIM and LSET of a live list keep its bytes but count as a change
	// for WATCH, as Redis 7.0 signals them modified: only the marker moves.
	for _, line := range []string{"LTRIM l 0 -1", "LSET l 0 a"} {
		e.list(t, t0, strings.Fields(line)...)
		after := snapshotOf(t, e.f)
		if string(fsm.RestoredFromOld([]byte(after))) != string(fsm.RestoredFromOld([]byte(before))) {
			t.Errorf("%s changed the list", line)
		}
		if after == before {
			t.Errorf("%s left the change marker as it was", line)
		}
		before = after
	}
	if got := e.list(t, t0+5e9, "TTL", "l"); got != "95" {
		t.Errorf("TTL after the no-ops: %s", got)
	}
}

// TestListExpiryAndRename: a list keeps its expiry through pushes, pops
// and trims, is gone at its instant for every command, takes the wide
// expiry past 2262 exactly, and RENAME moves it whole.
func TestListExpiryAndRename(t *testing.T) {
	e := newEngine(4)
	for i, s := range []struct {
		at         int64
		line, want string
	}{
		{0, "RPUSH l a b c", "3"},
		{0, "PEXPIRE l 1500", "1"},
		{1e6, "LPUSH l z", "4"},
		{1e6, "RPOP l", `$"c"`},
		{1e6, "LTRIM l 0 1", "+OK"},
		{1e6, "PTTL l", "1499"},
		{1e6, "RENAME l m", "+OK"},
		{1e6, "LRANGE m 0 -1", `*["z" "a"]`},
		{1500e6 - 1, "LLEN m", "2"},
		{1501e6, "LLEN m", "0"},
		{1501e6, "LRANGE m 0 -1", "*[]"},
		{1501e6, "LPUSHX m a", "0"},
		{1501e6, "RPUSH w a", "1"},
		{1501e6, "PEXPIREAT w 9223372036854775807", "1"},
		{1501e6, "PEXPIRETIME w", "9223372036854775807"},
		{1501e6, "RPUSH w b", "2"},
		{1501e6, "PEXPIRETIME w", "9223372036854775807"},
		{1501e6, "PERSIST w", "1"},
		{1501e6, "TTL w", "-1"},
	} {
		if got := e.list(t, t0+s.at, strings.Fields(s.line)...); got != s.want {
			t.Errorf("step %d at +%d ns, %s: %s, want %s", i, s.at, s.line, got, s.want)
		}
	}
	other := newEngine(1)
	restoreFrom(t, other, e)
	if got := other.list(t, t0+1501e6, "PEXPIRETIME", "w"); got != "-1" {
		t.Errorf("after a restore: PEXPIRETIME %s", got)
	}
}
