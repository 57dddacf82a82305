package metrics

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// Commands is what the server records on its request path: each command's
// latency and each decision's outcome. The server holds one (nil when
// metrics are off) and calls it from every connection's goroutine; every
// method is safe for concurrent use, allocation-free, and costs a few
// atomic adds. The registry reads it at scrape time.
type Commands struct {
	labels  map[*commands.Spec]int // a command's index in names and latency
	names   []string               // label values: the table's names, then "unknown"
	latency []latencyHistogram

	decisions [numFamilies][numOutcomes]atomic.Uint64
}

// UnknownCommand is the command label of a name the table does not know:
// client input never becomes a label value.
const UnknownCommand = "unknown"

// NewCommands returns a Commands with a latency histogram for every
// command of the table (a container's subcommands count under its name).
func NewCommands() *Commands {
	all := commands.All()
	c := &Commands{labels: make(map[*commands.Spec]int, 2*len(all))}
	for _, s := range all {
		i := len(c.names)
		c.names = append(c.names, s.Name)
		c.labels[s] = i
		for _, sub := range s.Subs {
			c.labels[sub] = i
		}
	}
	c.names = append(c.names, UnknownCommand)
	c.latency = make([]latencyHistogram, len(c.names))
	return c
}

// Label is spec's index for ObserveN; nil (a name the table does not know)
// is the unknown label's.
func (c *Commands) Label(spec *commands.Spec) int {
	if i, ok := c.labels[spec]; ok {
		return i
	}
	return len(c.names) - 1
}

// ObserveN records n calls of the command with label that each took d.
func (c *Commands) ObserveN(label int, d time.Duration, n int) {
	c.latency[label].observeN(d, uint64(n))
}

// The families whose calls are decisions, and a decision's outcomes.
const (
	notDecision = iota
	familyCL
	familyTB
	familySL
	familyIncrEx
	familyScript
	numFamilies
)

var familyNames = [numFamilies]string{"", "cl", "tb", "sl", "increx", "script"}

const (
	outcomeAllowed = iota
	outcomeLimited
	outcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"allowed", "limited", "error"}

// decisionFamily maps a request code to its decision family: the calls
// that decide and consume (CL.THROTTLE, TB.TAKE, SL.HIT, INCREX) and
// scripts, which is how limiters not built in are written. PEEKs only
// look and are not decisions. An array index: no map, no switch.
var decisionFamily = func() (t [256]uint8) {
	t[request.Throttle] = familyCL
	t[request.TBTake] = familyTB
	t[request.SLHit] = familySL
	t[request.IncrEx] = familyIncrEx
	for _, c := range []request.Code{request.Eval, request.EvalSha, request.EvalRO, request.EvalShaRO} {
		t[c] = familyScript
	}
	return t
}()

// CountDecisions counts the decisions among reqs, answered res, or all
// failed with err (a batch failure: CLUSTERDOWN, TRYAGAIN, an unknown
// outcome), each as the client saw it:
//
//	allowed  a limiter's reply with limited 0; INCREX that applied its whole
//	         increment; a script that answered anything but an error
//	limited  a limiter's reply with limited 1; INCREX that skipped or
//	         saturated (in BYFLOAT mode: skipped) past a bound
//	error    an error reply
//
// A request of a transaction whose WATCH failed did not run (EXEC answers
// nil) and is not counted. It adds once per family and outcome present,
// not once per request.
func (c *Commands) CountDecisions(reqs []request.Request, res []request.Result, err error) {
	var counts [numFamilies][numOutcomes]uint32
	found := false
	for i := range reqs {
		f := decisionFamily[reqs[i].Code]
		if f == notDecision {
			continue
		}
		o := outcomeError
		if part, ok := err.(*request.Partial); ok && (i >= len(part.Errs) || part.Errs[i] == nil) {
			// A pipeline split over groups that failed in part: this
			// request's group decided it.
			var ok bool
			if o, ok = outcomeOf(&reqs[i], &res[i]); !ok {
				continue
			}
		} else if err == nil {
			var ok bool
			if o, ok = outcomeOf(&reqs[i], &res[i]); !ok {
				continue
			}
		}
		counts[f][o]++
		found = true
	}
	if !found {
		return
	}
	for f := range counts {
		for o, n := range counts[f] {
			if n > 0 {
				c.decisions[f][o].Add(uint64(n))
			}
		}
	}
}

// outcomeOf is a decision's outcome; false for one that did not run.
func outcomeOf(r *request.Request, res *request.Result) (int, bool) {
	switch res.Kind {
	case request.KindError:
		// Not decisions: a transaction WATCH aborted, and an EVALSHA of a
		// script not cached yet (every library sends it before EVAL, so a
		// healthy start would light the error panel).
		if res.Err == request.ErrWatchAborted || res.Err == request.ErrNoScript {
			return 0, false
		}
		return outcomeError, true
	case request.KindThrottle:
		if res.Ints[0] != 0 {
			return outcomeLimited, true
		}
	case request.KindInts: // INCREX: [new value, applied increment]
		if applied, ok := secondVarint(res.Data); ok && r.Code == request.IncrEx && applied != r.Args[1] {
			return outcomeLimited, true
		}
	case request.KindDoubles: // INCREX BYFLOAT: the applied increment's text
		if applied, ok := secondItem(res.Data); ok && r.Code == request.IncrEx && string(applied) == "0" {
			return outcomeLimited, true
		}
	}
	return outcomeAllowed, true
}

// secondVarint is the second integer of a KindInts array.
func secondVarint(data []byte) (int64, bool) {
	_, w := binary.Varint(data)
	if w <= 0 {
		return 0, false
	}
	v, w2 := binary.Varint(data[w:])
	return v, w2 > 0
}

// secondItem is the second item of a list in request.AppendItem's
// encoding.
func secondItem(data []byte) ([]byte, bool) {
	l, w := binary.Uvarint(data)
	if w <= 0 || l > uint64(len(data)-w) {
		return nil, false
	}
	data = data[w+int(l):]
	l, w = binary.Uvarint(data)
	if w <= 0 || l > uint64(len(data)-w) {
		return nil, false
	}
	return data[w : w+int(l)], true
}

var (
	decisionsDesc = prometheus.NewDesc("redcell_decisions_total",
		"Decisions this node answered its clients (forwarded ones included), by family and outcome.",
		[]string{"family", "outcome"}, nil)
	commandDurationDesc = prometheus.NewDesc("redcell_command_duration_seconds",
		"Time from reading a command's pipeline to its replies being ready, by command (the table's names; unknown for any other).",
		[]string{"command"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Commands) Describe(ch chan<- *prometheus.Desc) {
	ch <- decisionsDesc
	ch <- commandDurationDesc
}

// Collect implements prometheus.Collector: every family and outcome (zero
// included, so that rates exist from the start), and the latency of each
// command called at least once.
func (c *Commands) Collect(ch chan<- prometheus.Metric) {
	for f := familyCL; f < numFamilies; f++ {
		for o := range numOutcomes {
			ch <- prometheus.MustNewConstMetric(decisionsDesc, prometheus.CounterValue,
				float64(c.decisions[f][o].Load()), familyNames[f], outcomeNames[o])
		}
	}
	for i := range c.latency {
		if c.latency[i].count() > 0 {
			ch <- c.latency[i].metric(commandDurationDesc, c.names[i])
		}
	}
}
