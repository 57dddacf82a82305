package fsm_test

import (
	"fmt"
	"strconv"
	"testing"
)

// INCREX in the state machine, rule by rule of data-types.md "INCREX" (Redis
// 8.8 cannot run here: the spec's rules and examples are the oracle). Each
// group of steps starts on a fresh state machine at t0.

const (
	increxNotInteger = "-ERR value is not an integer or out of range"
	increxNotFloat   = "-ERR value is not a valid float"
	increxNaNOrInf   = "-ERR increment would produce NaN or Infinity"
	increxSyntax     = "-ERR syntax error"
	increxBounds     = "-ERR LBOUND must be less than or equal to UBOUND"
	increxTimeErr    = "-ERR invalid expire time in 'increx' command"
)

func TestIncrExRules(t *testing.T) {
	ms := t0 / 1e6
	for _, tc := range []struct {
		rule  string
		steps []expireStep
	}{
		{"a missing key starts at 0; the default increment is 1 (integer mode)", []expireStep{
			{0, "INCREX k", "*[1 1]"},
			{0, "INCREX k", "*[2 1]"},
			{0, "GET k", `+"2"`},
			{0, "TYPE k", "+string"},
			{0, "PTTL k", "-1"},
		}},
		{"BYINT adds an integer, negative ones too", []expireStep{
			{0, "INCREX k BYINT 5", "*[5 5]"},
			{0, "INCREX k byint -12", "*[-7 -12]"},
			{0, "INCREX k BYINT 0", "*[-7 0]"},
			{0, "GET k", `+"-7"`},
		}},
		{"BYINT needs an integer, as INCRBY", []expireStep{
			{0, "INCREX k BYINT 1.5", increxNotInteger},
			{0, "INCREX k BYINT +1", increxNotInteger},
			{0, "INCREX k BYINT 01", increxNotInteger},
			{0, "INCREX k BYINT abc", increxNotInteger},
			{0, "EXISTS k", "0"},
			{0, "SET k 1.5", "+OK"},
			{0, "INCREX k", increxNotInteger},
			{0, "INCREX k BYINT 1", increxNotInteger},
			{0, "SET k abc", "+OK"},
			{0, "INCREX k BYINT 1 SATURATE UBOUND 5", increxNotInteger},
			{0, "GET k", `+"abc"`},
		}},
		{"BYFLOAT takes integers and floats; the value is a long double", []expireStep{
			{0, "INCREX f BYFLOAT 1.5", ",[1.5 1.5]"},
			{0, "INCREX f BYFLOAT 2", ",[3.5 2]"},
			{0, "GET f", `+"3.5"`},
			{0, "SET f 0.1", "+OK"},
			{0, "INCREX f BYFLOAT 0.2", ",[0.3 0.2]"},
			{0, "INCREX f BYFLOAT 0x10", ",[16.3 16]"},
			{0, "INCREX f BYFLOAT -16.3", ",[0 -16.3]"},
			{0, "SET f 7", "+OK"},
			{0, "INCREX f BYFLOAT 0.5", ",[7.5 0.5]"},
			{0, "INCREX f BYFLOAT abc", increxNotFloat},
			{0, "INCREX f BYFLOAT 1 LBOUND x", increxNotFloat},
			{0, "INCREX f BYFLOAT 1 UBOUND 1.2.3", increxNotFloat},
			{0, "SET f abc", "+OK"},
			{0, "INCREX f BYFLOAT 1", increxNotFloat},
		}},
		{"BYFLOAT refuses NaN or infinite results", []expireStep{
			{0, "SET f 1e4932", "+OK"},
			{0, "INCREX f BYFLOAT 1e4932", increxNaNOrInf},
			{0, "INCREX f BYFLOAT 1e4932 UBOUND 5 SATURATE", increxNaNOrInf},
			{0, "INCREX g BYFLOAT inf", increxNaNOrInf},
			{0, "INCREX g BYFLOAT -inf", increxNaNOrInf},
			{0, "INCREX g BYFLOAT nan", increxNotFloat},
			{0, "SET h inf", "+OK"},
			{0, "INCREX h BYFLOAT 1", increxNaNOrInf},
			{0, "EXISTS g", "0"},
			{0, "GET f", `+"1e4932"`},
		}},
		{"a result past UBOUND or LBOUND is skipped: [current, 0], key and TTL untouched", []expireStep{
			{0, "SET c 100 PX 50000", "+OK"},
			{0, "INCREX c UBOUND 100", "*[100 0]"},
			{0, "INCREX c BYINT 5 UBOUND 104 EX 1000", "*[100 0]"},
			{0, "INCREX c BYINT -101 LBOUND 0 PERSIST", "*[100 0]"},
			{1000e6, "PTTL c", "49000"},
			{0, "GET c", `+"100"`},
			{0, "INCREX c BYINT 4 UBOUND 104", "*[104 4]"},
			{0, "INCREX c BYINT -104 LBOUND 0", "*[0 -104]"},
			{0, "INCREX missing UBOUND 0", "*[0 0]"},
			{0, "EXISTS missing", "0"},
			{0, "INCREX missing LBOUND 5", "*[0 0]"},
			{0, "EXISTS missing", "0"},
		}},
		{"past the type's limits is skipped too", []expireStep{
			{0, "SET m 9223372036854775807", "+OK"},
			{0, "INCREX m", "*[9223372036854775807 0]"},
			{0, "INCREX m BYINT -1", "*[9223372036854775806 -1]"},
			{0, "SET n -9223372036854775808", "+OK"},
			{0, "INCREX n BYINT -1", "*[-9223372036854775808 0]"},
			{0, "INCREX n BYINT 9223372036854775807", "*[-1 9223372036854775807]"},
		}},
		{"SATURATE clamps to the bound and answers the increment applied", []expireStep{
			{0, "SET c 90", "+OK"},
			{0, "INCREX c BYINT 50 UBOUND 100 SATURATE", "*[100 10]"},
			{0, "INCREX c BYINT 1 UBOUND 100 SATURATE", "*[100 0]"},
			{0, "INCREX c BYINT -500 LBOUND -5 SATURATE", "*[-5 -105]"},
			{0, "INCREX x LBOUND 10 SATURATE", "*[10 10]"},
			{0, "SET m 9223372036854775800", "+OK"},
			{0, "INCREX m BYINT 100 SATURATE", "*[9223372036854775807 7]"},
			{0, "SET n -9223372036854775808", "+OK"},
			{0, "INCREX n BYINT -1 SATURATE", "*[-9223372036854775808 0]"},
			// An applied increment int64 cannot hold: skipped.
			{0, "SET m 9223372036854775807", "+OK"},
			{0, "INCREX m BYINT 1 LBOUND -10 UBOUND -5 SATURATE", "*[9223372036854775807 0]"},
			{0, "SET f 1.5", "+OK"},
			{0, "INCREX f BYFLOAT 1 UBOUND 2", ",[1.5 0]"},
			{0, "INCREX f BYFLOAT 1 UBOUND 2 SATURATE", ",[2 0.5]"},
			{0, "INCREX f BYFLOAT -10 LBOUND -1.25 SATURATE", ",[-1.25 -3.25]"},
			{0, "INCREX f BYFLOAT -1 LBOUND -inf UBOUND +inf", ",[-2.25 -1]"},
			{0, "INCREX f BYFLOAT 1 LBOUND inf SATURATE", ",[-2.25 0]"},
			{0, "INCREX g BYFLOAT 1 UBOUND 0", ",[0 0]"},
			{0, "GET f", `+"-2.25"`},
		}},
		{"LBOUND > UBOUND is an error", []expireStep{
			{0, "INCREX c LBOUND 5 UBOUND 4", increxBounds},
			{0, "INCREX c UBOUND 4 LBOUND 5 SATURATE", increxBounds},
			{0, "INCREX c LBOUND 1 UBOUND 1", "*[1 1]"},
			{0, "INCREX c BYFLOAT 1 LBOUND 5 UBOUND 4.5", increxBounds},
			{0, "INCREX c BYFLOAT 1 LBOUND inf UBOUND 1e4000", increxBounds},
			{0, "GET c", `+"1"`},
		}},
		{"expiry options as SET's; none keeps the TTL; PERSIST removes it", []expireStep{
			{0, "INCREX e EX 60", "*[1 1]"},
			{0, "PTTL e", "60000"},
			{1000e6, "INCREX e", "*[2 1]"},
			{1000e6, "PTTL e", "59000"},
			{1000e6, "INCREX e PX 5000", "*[3 1]"},
			{1000e6, "PTTL e", "5000"},
			{1000e6, "INCREX e EXAT " + strconv.FormatInt(ms/1000+100, 10), "*[4 1]"},
			{1000e6, "EXPIRETIME e", strconv.FormatInt(ms/1000+100, 10)},
			{1000e6, "INCREX e PXAT " + strconv.FormatInt(ms+7777, 10), "*[5 1]"},
			{1000e6, "PEXPIRETIME e", strconv.FormatInt(ms+7777, 10)},
			{1000e6, "INCREX e PERSIST", "*[6 1]"},
			{1000e6, "PTTL e", "-1"},
			{1000e6, "INCREX e BYFLOAT 0.5 EX 10", ",[6.5 0.5]"},
			{1000e6, "PTTL e", "10000"},
			{11000e6, "EXISTS e", "1"},
			{11001e6, "EXISTS e", "0"},
			{11001e6, "INCREX e", "*[1 1]"},
			{11001e6, "PTTL e", "-1"},
			{0, "INCREX p EXAT 1", "*[1 1]"},
			{0, "EXISTS p", "0"},
		}},
		{"a relative expiry is checked as SET's, against the entry's now", []expireStep{
			{0, "INCREX k EX 0", increxTimeErr},
			{0, "INCREX k PX -1", increxTimeErr},
			{0, "INCREX k EX 9223372036854775807", increxTimeErr},
			{0, "INCREX k EX abc", increxNotInteger},
			{0, "INCREX k PX 9223372036854775000", increxTimeErr},
			{0, "INCREX k BYFLOAT 1 PX 9223372036854775000", increxTimeErr},
			{0, "INCREX k BYFLOAT 1 EX 0", increxTimeErr},
			{0, "INCREX k BYFLOAT x EX 0", increxNotFloat}, // the floats first, in both modes
			{0, "INCREX k BYINT x EX 0", increxNotInteger},
			{0, "EXISTS k", "0"},
		}},
		{"ENX sets the expiry only when the key has none; the increment always", []expireStep{
			{0, "INCREX w EX 60 ENX", "*[1 1]"},
			{0, "PTTL w", "60000"},
			{10000e6, "INCREX w EX 60 ENX", "*[2 1]"},
			{10000e6, "PTTL w", "50000"},
			{10000e6, "INCREX w PX 100 ENX", "*[3 1]"},
			{10000e6, "PTTL w", "50000"},
			{10000e6, "SET v 1", "+OK"},
			{10000e6, "INCREX v PXAT " + strconv.FormatInt(ms+20000, 10) + " ENX", "*[2 1]"},
			{10000e6, "PTTL v", "10000"},
			{10000e6, "INCREX v ENX", increxSyntax},
			{10000e6, "INCREX v PERSIST ENX", increxSyntax},
			{10000e6, "INCREX v ENX PERSIST", increxSyntax},
			{10000e6, "GET v", `+"2"`},
		}},
		{"WRONGTYPE on a non-string; a CL key is a string holding its TAT", []expireStep{
			{0, "SADD s a", "1"},
			{0, "INCREX s", setWrongTypeReply},
			{0, "INCREX s BYFLOAT 1", setWrongTypeReply},
			{0, "TB.TAKE tb 5 1 60000", "[0 5 4 -1 60000]"},
			{0, "INCREX tb UBOUND 0", setWrongTypeReply},
			{0, "CL.THROTTLE cl 5 1 60", "[0 6 5 -1 60]"},
			{0, "INCREX cl BYINT 1", fmt.Sprintf("*[%d 1]", t0+60e9+1)},
			{0, "TYPE cl", "+string"},
			{0, "PTTL cl", "60000"},
			{0, "CL.THROTTLE cl2 5 1 60", "[0 6 5 -1 60]"},
			{0, "INCREX cl2 UBOUND 5", fmt.Sprintf("*[%d 0]", t0+60e9)},
			{0, "TYPE cl2", "+string"},
		}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			runCollectionSteps(t, newEngine(2), tc.steps)
		})
	}
}

// TestIncrExWindowCounter is the spec's example: INCREX rl:{user} BYINT 1
// UBOUND 100 EX 60 ENX admits 100 calls in a window that starts with the
// first; the 101st answers 0 as its second element and changes nothing; the
// window's expiry is never pushed back; the next window starts afresh.
func TestIncrExWindowCounter(t *testing.T) {
	e := newEngine(2)
	const line = "INCREX rl:{user} BYINT 1 UBOUND 100 EX 60 ENX"
	for i := 1; i <= 100; i++ {
		at := int64(i) * 100e6 // 0.1 s apart
		runCollectionSteps(t, e, []expireStep{{at, line, fmt.Sprintf("*[%d 1]", i)}})
	}
	before := recordsOf(t, e.f)
	runCollectionSteps(t, e, []expireStep{
		{20000e6, line, "*[100 0]"},
		{59000e6, line, "*[100 0]"},
		{59000e6, "TTL rl:{user}", "1"}, // the first call's window: 100 ms + 60 s
	})
	if recordsOf(t, e.f) != before {
		t.Errorf("a call past the limit changed the record")
	}
	runCollectionSteps(t, e, []expireStep{
		{60100e6, "GET rl:{user}", `+"100"`},
		{60101e6, "EXISTS rl:{user}", "0"},
		{60101e6, line, "*[1 1]"},
		{60101e6, "PTTL rl:{user}", "60000"},
	})
}

// TestIncrExSkipKeepsRecord: a skipped INCREX leaves the record as it was
// (WATCH sees no change), a saturated one that stores the same value is a
// write.
func TestIncrExSkipKeepsRecord(t *testing.T) {
	e := newEngine(2)
	runCollectionSteps(t, e, []expireStep{{0, "SET c 10 EX 100", "+OK"}})
	before := recordsOf(t, e.f)
	runCollectionSteps(t, e, []expireStep{
		{1e6, "INCREX c UBOUND 10 PERSIST", "*[10 0]"},
		{1e6, "INCREX c BYFLOAT 1 UBOUND 10 EX 5", ",[10 0]"},
		{1e6, "INCREX c BYINT -11 LBOUND 0 PX 5", "*[10 0]"},
	})
	if recordsOf(t, e.f) != before {
		t.Errorf("a skipped INCREX changed the record")
	}
	runCollectionSteps(t, e, []expireStep{
		{1e6, "INCREX c UBOUND 10 SATURATE PERSIST", "*[10 0]"},
		{1e6, "PTTL c", "-1"},
	})
}
