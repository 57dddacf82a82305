package fsm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// scanAll iterates SCAN with the given options to the end and returns the
// keys, sorted, failing on a key returned twice.
func scanAll(t *testing.T, e *engine, now int64, opts string) []string {
	t.Helper()
	var keys []string
	seen := map[string]bool{}
	cursor := "0"
	for calls := 0; ; calls++ {
		r := parsed(t, "SCAN "+cursor+" "+opts)
		var res request.Result
		e.f.Read(&r, now, &res)
		if res.Kind != request.KindScan {
			t.Fatalf("SCAN %s %s: %+v", cursor, opts, res)
		}
		request.Items(res.Data, func(k []byte) {
			if seen[string(k)] {
				t.Errorf("SCAN %s: %q returned twice", opts, k)
			}
			seen[string(k)] = true
			keys = append(keys, string(k))
		})
		cursor = fmt.Sprint(uint64(res.Ints[0]))
		if cursor == "0" {
			break
		}
		if calls > 10_000 {
			t.Fatal("SCAN does not end")
		}
	}
	slices.Sort(keys)
	return keys
}

func keysOf(t *testing.T, e *engine, now int64, pattern string) []string {
	t.Helper()
	r := parsed(t, "KEYS "+pattern)
	var res request.Result
	e.f.Read(&r, now, &res)
	if res.Kind != request.KindKeys {
		t.Fatalf("KEYS %s: %+v", pattern, res)
	}
	var keys []string
	request.Items(res.Data, func(k []byte) { keys = append(keys, string(k)) })
	slices.Sort(keys)
	return keys
}

// TestScanAndKeys: SCAN (any COUNT, MATCH, TYPE) and KEYS list exactly the
// live keys of every family; a key whose lifetime has passed is never
// listed, although no sweep has run since; INFO keyspace's count and
// average lifetime agree.
func TestScanAndKeys(t *testing.T) {
	e := newEngine(16)
	var want, wantTB, wantUser []string
	for i := 0; i < 60; i++ {
		k := fmt.Sprintf("user:%02d", i)
		switch i % 4 {
		case 0:
			e.line(t, t0, "CL.THROTTLE "+k+" 5 1 3600")
		case 1:
			e.line(t, t0, "TB.TAKE "+k+" 5 1 3600000")
			wantTB = append(wantTB, k)
		case 2:
			e.line(t, t0, "TB.TAKE "+k+" 5 1 3600000 INTERVAL")
			wantTB = append(wantTB, k)
		case 3:
			e.line(t, t0, "SL.HIT "+k+" 5 3600000")
		}
		want = append(want, k)
		wantUser = append(wantUser, k)
		// and a short-lived key of every family: gone 1 s later
		short := []string{"CL.THROTTLE short:%d 0 1 1", "TB.TAKE short:%d 5 5 1000", "SL.HIT short:%d 5 1000", "TB.TAKE short:%d 5 5 1000 INTERVAL"}[i%4]
		if got := e.line(t, t0, fmt.Sprintf(short, i)); !strings.HasPrefix(got, "[0 ") {
			t.Fatalf("%s: %s", short, got)
		}
	}
	for i := 0; i < 60; i++ {
		e.line(t, t0, fmt.Sprintf("SL.HIT other:%d 1 3600000", i))
		want = append(want, fmt.Sprintf("other:%d", i))
	}
	slices.Sort(want)
	now := t0 + 2e9 // the short keys are gone; no entry (so no sweep) since
	for _, count := range []int{1, 3, 10, 1000} {
		if got := scanAll(t, e, now, fmt.Sprintf("COUNT %d", count)); !slices.Equal(got, want) {
			t.Errorf("SCAN COUNT %d: %d keys %v…, want %d", count, len(got), got[:min(5, len(got))], len(want))
		}
	}
	if got := scanAll(t, e, now, "MATCH user:* COUNT 7"); !slices.Equal(got, wantUser) {
		t.Errorf("SCAN MATCH user:*: %d keys, want %d", len(got), len(wantUser))
	}
	slices.Sort(wantTB)
	if got := scanAll(t, e, now, "TYPE TOKENBUCKET MATCH user:*"); !slices.Equal(got, wantTB) {
		t.Errorf("SCAN TYPE tokenbucket: %v, want %v", got, wantTB)
	}
	if got := scanAll(t, e, now, "TYPE string"); len(got) != 15 {
		t.Errorf("SCAN TYPE string: %d keys, want 15", len(got))
	}
	if got := scanAll(t, e, now, "TYPE slidinglog"); len(got) != 75 {
		t.Errorf("SCAN TYPE slidinglog: %d keys, want 75", len(got))
	}
	if got := scanAll(t, e, now, "TYPE hash"); len(got) != 0 {
		t.Errorf("SCAN TYPE hash: %v", got)
	}
	if got := keysOf(t, e, now, "*"); !slices.Equal(got, want) {
		t.Errorf("KEYS *: %d keys, want %d", len(got), len(want))
	}
	if got := keysOf(t, e, now, "short:*"); len(got) != 0 {
		t.Errorf("KEYS short:* after their lifetime: %v", got)
	}
	if got := keysOf(t, e, t0, "short:*"); len(got) != 60 {
		t.Errorf("KEYS short:* while alive: %d keys", len(got))
	}
	if got := keysOf(t, e, now, "user:1[0-3]"); !slices.Equal(got, []string{"user:10", "user:11", "user:12", "user:13"}) {
		t.Errorf("KEYS user:1[0-3]: %v", got)
	}
	n, expires, avg := e.f.Keyspace(now)
	if n != len(want) || expires != n {
		t.Errorf("Keyspace counts %d keys, %d expiring, want %d of each (lapsed keys not counted)", n, expires, len(want))
	}
	// CL keys: 6 s − 2 s (GCRA 1/3600 s with burst 5: TAT = t0 + 3600 s);
	// all others 3600 s − 2 s. All near 3598 s.
	if avg < 3597_000 || avg > 3599_000 {
		t.Errorf("Keyspace avg_ttl %d ms, want about 3598000", avg)
	}
	if got := e.line(t, now, "DBSIZE"); got != fmt.Sprint(len(want)) {
		t.Errorf("DBSIZE %s", got)
	}
}

// TestScanInsideAnEntry: a SCAN in a MULTI's entry sees the entry's own
// earlier writes, at the entry's instant.
func TestScanInsideAnEntry(t *testing.T) {
	e := newEngine(4)
	e.line(t, t0, "SL.HIT old 1 1000")
	lines := []string{"TB.TAKE new 5 1 1000", "SCAN 0 COUNT 100", "KEYS *", "DEL new"}
	var reqs []request.Request
	for _, l := range lines {
		reqs = append(reqs, parsed(t, l))
	}
	res := e.entry(t, t0+1e9, reqs) // old's lifetime has just ended
	var page, all []string
	request.Items(res[1].Data, func(k []byte) { page = append(page, string(k)) })
	request.Items(res[2].Data, func(k []byte) { all = append(all, string(k)) })
	if res[1].Kind != request.KindScan || res[1].Ints[0] != 0 || strings.Join(page, ",") != "new" {
		t.Errorf("SCAN in the entry: %+v %v", res[1], page)
	}
	if res[2].Kind != request.KindKeys || strings.Join(all, ",") != "new" {
		t.Errorf("KEYS in the entry: %+v %v", res[2], all)
	}
}
