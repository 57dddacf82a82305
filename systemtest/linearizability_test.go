package systemtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability of limiter histories, checked with porcupine.
//
// Clients record every operation they send with its invocation and return
// times; checkLinearizable asks porcupine whether some total order of the
// operations, each placed between its invocation and its return, explains
// every reply by the sequential model below. A lost decision, a double
// admission or a stale read makes the history illegal.
//
// The model covers limiters that cannot refill during a test: one unit a day
// (CL.THROTTLE key B 1 86400, and with Family set TB.TAKE key B+1 1 86400000,
// greedy or INTERVAL, or SL.HIT key B+1 86400000, each with its PEEK), so a
// key's whole state is the number of units taken, 0 … B+1 (capacity B+1),
// and every family replies alike. Time passing during a test (seconds)
// moves no whole unit. Per key:
//
//	THROTTLE  taken < B+1: [0, B+1, B+1-taken-1, -1, reset], taken+1
//	          otherwise:   [1, B+1, 0, retry>0, reset],     unchanged
//	PEEK      what THROTTLE would reply (remaining as if the call happened),
//	          unchanged
//	DEL       1 if taken > 0 (the key exists) else 0; taken = 0
//
// Only limited and remaining are compared (retry and reset depend on the
// clock); the reply's shape and limit are checked when it is parsed.
//
// An operation whose outcome is unknown (an error reply such as TRYAGAIN or
// CLUSTERDOWN, a timeout, a broken connection) may have been applied, at any
// time after its invocation, or never. It is given a return time after the
// end of the history and the model accepts any reply for it while applying
// its effect: porcupine may place it anywhere after its invocation, and
// placing it after every other operation is the same as "never applied".
// Unknown PEEKs constrain nothing and are left out.

// limiterOp is one operation on a limiter key. Burst is B of
// CL.THROTTLE/CL.PEEK key B 1 86400 (unused by DEL): the key holds B+1 units.
// Family is the tag of a limiterFamilies entry ("" is CL): "throttle" and
// "peek" are then its call and its PEEK on B+1 units.
type limiterOp struct {
	Kind   string // "throttle", "peek", "del"
	Key    string
	Burst  int64
	Family string
}

// limiterOut is the reply to a limiterOp.
type limiterOut struct {
	Unknown   bool // an error or a timeout: the outcome is unknown
	Limited   int64
	Remaining int64
	Deleted   int64 // DEL's integer reply
}

// Limiter parameters: one unit a day, so nothing refills during a test.
const (
	limiterCount  = 1
	limiterPeriod = 86400
)

// args is the command op sends.
func (op limiterOp) args() []string {
	if op.Family != "" && op.Kind != "del" {
		for _, f := range limiterFamilies {
			if f.tag == op.Family && op.Kind == "throttle" {
				return f.call(op.Key, op.Burst+1)
			} else if f.tag == op.Family && op.Kind == "peek" {
				return f.peek(op.Key, op.Burst+1)
			}
		}
		panic("limiterOp: unknown family " + strconv.Quote(op.Family))
	}
	switch op.Kind {
	case "throttle":
		return []string{"CL.THROTTLE", op.Key, itoa(op.Burst), itoa(limiterCount), itoa(limiterPeriod)}
	case "peek":
		return []string{"CL.PEEK", op.Key, itoa(op.Burst), itoa(limiterCount), itoa(limiterPeriod)}
	case "del":
		return []string{"DEL", op.Key}
	}
	panic("limiterOp: unknown kind " + strconv.Quote(op.Kind))
}

// errBadReply marks a reply that is neither an error nor a well-formed
// answer to the operation: a bug, never an unknown outcome.
var errBadReply = errors.New("malformed limiter reply")

// parseLimiterReply turns a reply into a limiterOut. An error reply is
// returned as an error (outcome unknown); a malformed one wraps errBadReply.
func parseLimiterReply(op limiterOp, r reply) (limiterOut, error) {
	if r.isErr() {
		return limiterOut{Unknown: true}, fmt.Errorf("%s: -%s", op.Kind, r.str)
	}
	bad := func() (limiterOut, error) {
		return limiterOut{Unknown: true}, fmt.Errorf("%w: %s %s answered %v", errBadReply, op.Kind, op.Key, r)
	}
	if op.Kind == "del" {
		if r.kind != ':' || (r.num != 0 && r.num != 1) {
			return bad()
		}
		return limiterOut{Deleted: r.num}, nil
	}
	for _, f := range limiterFamilies {
		if f.tag == op.Family {
			r = f.decode(r, op.Burst+1, op.Kind == "peek")
		}
	}
	v, ok := r.ints()
	if !ok || len(v) != 5 || v[1] != op.Burst+1 || v[4] < 0 {
		return bad()
	}
	switch {
	case v[0] == 0 && v[3] == -1 && v[2] >= 0 && v[2] <= op.Burst:
	case v[0] == 1 && v[2] == 0 && v[3] > 0:
	default:
		return bad()
	}
	return limiterOut{Limited: v[0], Remaining: v[2]}, nil
}

// historyRecorder collects operations from concurrent clients. Times are
// monotonic nanoseconds since the recorder was made.
type historyRecorder struct {
	base time.Time
	mu   sync.Mutex
	ops  []recordedOp
	bad  []error // malformed replies (errBadReply)
}

type recordedOp struct {
	client    int
	op        limiterOp
	out       limiterOut
	err       string // why the outcome is unknown
	call, ret int64
}

func newHistoryRecorder() *historyRecorder { return &historyRecorder{base: time.Now()} }

func (h *historyRecorder) now() int64 { return int64(time.Since(h.base)) }

// record runs call as operation op of client clientID, timing it, and
// records its outcome: unknown when call returns an error or out.Unknown.
// It returns what call returned.
func (h *historyRecorder) record(clientID int, op limiterOp, call func() (limiterOut, error)) (limiterOut, error) {
	start := h.now()
	out, err := call()
	end := h.now()
	h.add(clientID, op, out, err, start, end)
	return out, err
}

// add records an operation with given times (record uses it; the checker's
// own tests build synthetic histories with it).
func (h *historyRecorder) add(clientID int, op limiterOp, out limiterOut, err error, call, ret int64) {
	r := recordedOp{client: clientID, op: op, out: out, call: call, ret: ret}
	if err != nil {
		r.out = limiterOut{Unknown: true}
		r.err = err.Error()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if errors.Is(err, errBadReply) {
		h.bad = append(h.bad, err)
	}
	h.ops = append(h.ops, r)
}

// counts is the number of operations recorded and of those whose outcome is
// unknown.
func (h *historyRecorder) counts() (total, unknown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.ops {
		if r.out.Unknown {
			unknown++
		}
	}
	return len(h.ops), unknown
}

// porcupineHistory converts the recorded operations: unknown outcomes return
// after everything else, unknown PEEKs are left out.
func (h *historyRecorder) porcupineHistory() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	var end int64
	for _, r := range h.ops {
		end = max(end, r.call, r.ret)
	}
	end++
	ops := make([]porcupine.Operation, 0, len(h.ops))
	for _, r := range h.ops {
		ret := r.ret
		if r.out.Unknown {
			if r.op.Kind == "peek" {
				continue
			}
			ret = end
		}
		ops = append(ops, porcupine.Operation{
			ClientId: r.client,
			Input:    r.op,
			Output:   r.out,
			Call:     r.call,
			Return:   ret,
			Metadata: r.err,
		})
	}
	return ops
}

// wouldThrottle is THROTTLE's (limited, remaining) with taken units of
// capacity gone.
func wouldThrottle(taken, capacity int64) (limited, remaining int64) {
	if taken < capacity {
		return 0, capacity - taken - 1
	}
	return 1, 0
}

// limiterModel is the sequential specification, partitioned by key; a
// partition's state is the number of units taken (int64).
var limiterModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(limiterOp).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return int64(0) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		taken, op, out := state.(int64), input.(limiterOp), output.(limiterOut)
		switch op.Kind {
		case "throttle":
			limited, remaining := wouldThrottle(taken, op.Burst+1)
			next := taken
			if limited == 0 {
				next++
			}
			return out.Unknown || out.Limited == limited && out.Remaining == remaining, next
		case "peek":
			limited, remaining := wouldThrottle(taken, op.Burst+1)
			return out.Unknown || out.Limited == limited && out.Remaining == remaining, taken
		case "del":
			existed := int64(0)
			if taken > 0 {
				existed = 1
			}
			return out.Unknown || out.Deleted == existed, int64(0)
		}
		return false, state
	},
	Hash: func(state interface{}) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(input, output interface{}) string {
		op, out := input.(limiterOp), output.(limiterOut)
		var res string
		switch {
		case out.Unknown:
			res = "? (outcome unknown)"
		case op.Kind == "del":
			res = strconv.FormatInt(out.Deleted, 10)
		case out.Limited != 0:
			res = "limited"
		default:
			res = fmt.Sprintf("allowed, %d left", out.Remaining)
		}
		if op.Kind == "del" {
			return fmt.Sprintf("del(%s) → %s", op.Key, res)
		}
		return fmt.Sprintf("%s(%s, burst %d) → %s", op.Kind, op.Key, op.Burst, res)
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("%d taken", state.(int64)) },
	DescribeOperationMetadata: func(info interface{}) string {
		if s, _ := info.(string); s != "" {
			return "error: " + s
		}
		return ""
	},
}

// checkHistory runs porcupine on h. It refuses (error) a history whose keys
// are used with different bursts, which the model cannot express.
func checkHistory(h *historyRecorder, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo, error) {
	ops := h.porcupineHistory()
	burst := map[string]int64{}
	for _, o := range ops {
		op := o.Input.(limiterOp)
		if op.Kind == "del" {
			continue
		}
		if b, ok := burst[op.Key]; ok && b != op.Burst {
			return "", porcupine.LinearizationInfo{}, fmt.Errorf("key %q is used with bursts %d and %d; the model needs one per key", op.Key, b, op.Burst)
		}
		burst[op.Key] = op.Burst
	}
	res, info := porcupine.CheckOperationsVerbose(limiterModel, ops, timeout)
	return res, info, nil
}

// checkLinearizable fails the test unless h is linearizable (Illegal) or
// when porcupine cannot decide within timeout (Unknown), and when any reply
// was malformed. On failure it writes porcupine's HTML visualization under
// $REDCELL_TEST_ARTIFACTS or, when that is unset, a kept temporary directory
// (t.TempDir is removed when the test ends), and logs its path.
func checkLinearizable(t testing.TB, h *historyRecorder, timeout time.Duration) {
	t.Helper()
	h.mu.Lock()
	bad := append([]error(nil), h.bad...)
	h.mu.Unlock()
	for i, err := range bad {
		if i == 5 {
			t.Errorf("… and %d more malformed replies", len(bad)-i)
			break
		}
		t.Errorf("%v", err)
	}
	total, unknown := h.counts()
	res, info, err := checkHistory(h, timeout)
	if err != nil {
		t.Errorf("linearizability: %v", err)
		return
	}
	switch res {
	case porcupine.Ok:
		t.Logf("linearizable: %d operations, %d with unknown outcome", total, unknown)
		return
	case porcupine.Unknown:
		t.Errorf("linearizability: porcupine could not decide within %v (%d operations, %d with unknown outcome); shorten the history or lower the concurrency per key", timeout, total, unknown)
	default:
		t.Errorf("NOT linearizable: no order of the %d operations (%d with unknown outcome) explains every reply", total, unknown)
	}
	path, err := writeVisualization(t.Name(), info)
	if err != nil {
		t.Logf("writing the visualization: %v", err)
		return
	}
	t.Logf("porcupine visualization (open in a browser): %s", path)
}

func writeVisualization(testName string, info porcupine.LinearizationInfo) (string, error) {
	dir := os.Getenv("REDCELL_TEST_ARTIFACTS")
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	} else {
		d, err := os.MkdirTemp("", "redcell-linearizability-")
		if err != nil {
			return "", err
		}
		dir = d
	}
	name := strings.NewReplacer("/", "_", " ", "_", ":", "_").Replace(testName)
	f, err := os.CreateTemp(dir, name+"-*.html")
	if err != nil {
		return "", err
	}
	path := f.Name()
	err = porcupine.Visualize(limiterModel, info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return filepath.Clean(path), err
}
