package systemtest

import (
	"fmt"
	"testing"
	"time"
)

// The books TestClusterClientsOfGroups keeps: every answer a limiter gave
// for one key, checked against every answer before it. A limit of N admits
// at most N; each admission's remaining count is N less the admissions so
// far, less at most the requests whose outcome is unknown; a refusal comes
// only once the admissions and unknown outcomes reach N. A decision lost in
// a failover (acknowledged, then missing from the new leader's state) shows
// as a remaining count above the bound, or as one admission too many.

// groupsLedger is one limiter's key and everything it answered. It is
// used by one goroutine at a time.
type groupsLedger struct {
	who    string // the client, the limiter and the key, for messages
	key    string // the Redis key the limiter keeps the id's state under
	group  int
	limit  int
	routed string // groupsLimiter.routed
	decide func() decision

	calls, allowed, refused, failed int
	// unseen is how many requests the client may have retried without
	// reporting it, each possibly counted twice: go-redis, rueidis,
	// redis-py and ioredis retry TRYAGAIN (Redis Cluster's promises the
	// command did not run; Redcell's "may or may not have been applied"
	// does not), so across a kill one request (the one in flight) may.
	unseen int
	errs   errorCounts
}

// newGroupsLedger is a ledger for an id of its own (kind and the client
// name it) whose key falls in group g.
func newGroupsLedger(cl *groupsClient, lim *groupsLimiter, kind string, g int) *groupsLedger {
	id := pickGroupKey(fmt.Sprintf("%s:%s:%s", cl.name, lim.name, kind), g, lim.key)
	return &groupsLedger{
		who: fmt.Sprintf("%s, %s on %s (group %d)", cl.name, lim.name, lim.key(id), g),
		key: lim.key(id), group: g, limit: lim.limit, routed: lim.routed,
		decide: func() decision { return lim.decide(id) },
	}
}

// note records one answer and says what in it is inconsistent with the
// answers before.
func (l *groupsLedger) note(d decision) []string {
	l.calls++
	if d.err != "" {
		l.failed++
		l.errs.add(d.err)
		return nil
	}
	unknown := l.failed + l.unseen
	if !d.allowed {
		l.refused++
		switch {
		case d.remaining != 0:
			return []string{fmt.Sprintf("%s: refused with %d remaining", l.who, d.remaining)}
		case l.allowed < l.limit-unknown:
			return []string{fmt.Sprintf("%s: refused after %d admissions of %d and %d unknown outcomes", l.who, l.allowed, l.limit, unknown)}
		}
		return nil
	}
	l.allowed++
	if l.allowed > l.limit {
		return []string{fmt.Sprintf("%s: OVER-ADMISSION: admission %d of a limit of %d (%d errors: %s)", l.who, l.allowed, l.limit, l.failed, l.errs.String())}
	}
	most := int64(l.limit - l.allowed)
	if d.remaining > most || d.remaining < most-int64(unknown) {
		return []string{fmt.Sprintf("%s: admission %d of %d with %d remaining, want %d less at most %d unknown outcomes (an acknowledged decision lost, or counted twice)",
			l.who, l.allowed, l.limit, d.remaining, most, unknown)}
	}
	return nil
}

// healthy asks n decisions of a healthy cluster: none may fail.
func (l *groupsLedger) healthy(n int) []string {
	var problems []string
	for range n {
		d := l.decide()
		if d.err != "" {
			problems = append(problems, fmt.Sprintf("%s: an error from a healthy cluster: %s", l.who, d.err))
		}
		problems = append(problems, l.note(d)...)
	}
	return problems
}

// stillLimited asks one decision of a healthy cluster on a key that was
// refused before: refused again, without an error.
func (l *groupsLedger) stillLimited() []string {
	d := l.decide()
	problems := l.note(d)
	switch {
	case d.err != "":
		problems = append(problems, fmt.Sprintf("%s: an error from a healthy cluster: %s", l.who, d.err))
	case d.allowed:
		problems = append(problems, fmt.Sprintf("%s: admitted after it was refused", l.who))
	}
	return problems
}

// untilDecided asks decisions, pausing briefly after each error, until one
// comes (or, with untilRefused, a refusal) or deadline passes. Errors are
// counted in errs too.
func (l *groupsLedger) untilDecided(deadline time.Time, untilRefused bool, errs *errorCounts) []string {
	var problems []string
	for {
		d := l.decide()
		problems = append(problems, l.note(d)...)
		if d.err != "" {
			errs.add(d.err)
		}
		if d.err == "" && (!untilRefused || !d.allowed) {
			return problems
		}
		if time.Now().After(deadline) {
			return append(problems, fmt.Sprintf("%s: not decided again by the deadline: %d admitted, %d refused, %d errors (%s)",
				l.who, l.allowed, l.refused, l.failed, l.errs.String()))
		}
		if d.err != "" {
			time.Sleep(pollEvery) // a client's pause before retrying after a failover error
		}
	}
}

// recoverGroups is one client's run after the kill: every ledger, the
// victim's group first, decided again: a spent limit must refuse, a half
// spent one must admit what is left and then refuse. It returns the
// problems, and logs nothing (it runs beside the other clients).
func recoverGroups(cl *groupsClient, ledgers []*groupsLedger, victimGroup int, killAt time.Time) []string {
	deadline := killAt.Add(groupsRecoverTimeout)
	var problems []string
	var firstDecision time.Duration
	var errs errorCounts
	for _, victimFirst := range []bool{true, false} {
		for _, l := range ledgers {
			if (l.group == victimGroup) != victimFirst {
				continue
			}
			problems = append(problems, l.untilDecided(deadline, l.allowed < l.limit, &errs)...)
			if firstDecision == 0 {
				firstDecision = time.Since(killAt)
			}
		}
	}
	problems = append(problems, summary(fmt.Sprintf("%s after the kill: the victim's group decided %v after it, then every key by %v; errors: %s",
		cl.name, firstDecision.Round(time.Millisecond), time.Since(killAt).Round(time.Millisecond), errs.String())))
	return problems
}

// summary is a line reportGroups logs instead of reporting as a problem.
func summary(text string) string { return summaryPrefix + text }

const summaryPrefix = "summary: "

// groupsHammer decides on one key through one client without pause from
// before a fault until a few decisions after it: the requests in flight
// when a leader dies or hands its group over.
type groupsHammer struct {
	client *groupsClient
	ledger *groupsLedger
	warm   chan struct{} // closed after its first decisions
	stop   chan struct{} // closed by the test once the fault is done
	done   chan struct{}
	// problems and after are the hammer goroutine's until done is closed.
	problems []string
	after    int // decisions asked after stop was closed
}

// groupsHammerLimit is a hammer's limit: more than it can spend.
const groupsHammerLimit = 100000

// startGroupsHammer starts deciding on key (in group g) through cl's
// CL.THROTTLE, unseen the ledger's allowance of retried unknown outcomes.
func startGroupsHammer(cl *groupsClient, key string, g, unseen int) *groupsHammer {
	lim := throttleLimiter(groupsHammerLimit, cl.throttle)
	h := &groupsHammer{
		client: cl,
		ledger: &groupsLedger{who: fmt.Sprintf("%s, CL.THROTTLE hammering %s (group %d)", cl.name, key, g),
			key: key, group: g, limit: groupsHammerLimit, unseen: unseen,
			decide: func() decision { return lim.decide(key) }},
		warm: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go func() { // the hammer: one request at a time until stopped
		defer close(h.done)
		deadline := time.Now().Add(2 * groupsRecoverTimeout)
		for n := 1; ; n++ {
			stopped := isClosed(h.stop)
			d := h.ledger.decide()
			h.problems = append(h.problems, h.ledger.note(d)...)
			if n == 5 {
				close(h.warm)
			}
			if stopped && d.err == "" {
				if h.after++; h.after == 3 {
					return
				}
			}
			if time.Now().After(deadline) {
				h.problems = append(h.problems, fmt.Sprintf("%s: still no decision %v after it started (%d errors: %s)",
					h.ledger.who, 2*groupsRecoverTimeout, h.ledger.failed, h.ledger.errs.String()))
				return
			}
			if d.err != "" {
				time.Sleep(pollEvery) // a client's pause before retrying after a failover error
			}
		}
	}()
	return h
}

// waitWarm waits for the hammer's first decisions.
func (h *groupsHammer) waitWarm(t *testing.T) {
	t.Helper()
	select {
	case <-h.warm:
	case <-h.done:
		t.Fatalf("%s stopped before the fault: %v", h.ledger.who, h.problems)
	}
}

// finish waits for the hammer to end and returns its problems and a
// summary of what it saw.
func (h *groupsHammer) finish() []string {
	<-h.done
	l := h.ledger
	return append(h.problems, summary(fmt.Sprintf("%s: %d decisions, %d errors (%s)", l.who, l.allowed+l.refused, l.failed, l.errs.String())))
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
