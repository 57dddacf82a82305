package fsm

import (
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// A state machine that owns some slots refuses, at apply, a request naming
// a key of a slot it does not own (ErrNotOwned, nothing changed) and
// applies the others of the same entry; a script's call on a key of
// another group's slot is refused as Redis Cluster refuses a non-local key.
// A request copied to every group (DBSIZE) names no slot and passes.
func TestOwnershipCheckedAtApply(t *testing.T) {
	mine := slots.KeySlotString("mine")
	f := New(Config{Stripes: 2, Logger: discardLogger(), Owns: func(s slots.Slot) bool { return s == mine }})
	theirs := "theirs"
	if slots.KeySlotString(theirs) == mine {
		t.Fatal("test keys share a slot")
	}
	incr := func(k string) request.Request {
		return request.Request{Code: request.IncrBy, Key: []byte(k), Args: [request.MaxArgs]int64{1}, NArgs: 1}
	}
	res := applyOne(t, f, commandLog(1, encodeEntry(t0, []request.Request{
		incr("mine"), incr(theirs), incr("mine"),
		{Code: request.DBSize},
	})))
	if res[0].Err != request.ErrNone || res[0].Ints[0] != 1 || res[2].Ints[0] != 2 {
		t.Errorf("owned key: %+v, %+v", res[0], res[2])
	}
	if res[1].Err != request.ErrNotOwned {
		t.Errorf("a key of a slot not owned: %+v, want ErrNotOwned", res[1])
	}
	if res[3].Err != request.ErrNone || res[3].Ints[0] != 1 {
		t.Errorf("DBSIZE: %+v, want 1 (the foreign key was not created)", res[3])
	}
	if !strings.HasPrefix(request.ErrNotOwned.Text(), "TRYAGAIN ") {
		t.Errorf("ErrNotOwned's text %q is not retryable", request.ErrNotOwned.Text())
	}

	script := request.Request{Code: request.Eval, Keys: [][]byte{[]byte("return redis.pcall('INCR', ARGV[1])"), []byte("mine"), []byte(theirs)},
		Args: [request.MaxArgs]int64{1}, NArgs: 1}
	res = applyOne(t, f, commandLog(2, encodeEntry(t0, []request.Request{script})))
	if got := string(res[0].Data); got != "-"+nonLocalKeyText+"\r\n" {
		t.Errorf("a script's call on a foreign key answered %q", got)
	}
}
