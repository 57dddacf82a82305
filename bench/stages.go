package main

import (
	"fmt"
	"strings"
)

// Where a request's time went. A client of a closed-loop load (redis-benchmark
// with c clients, each sending P requests and waiting for all P replies) has
// one batch in the server at a time, so its cycle — from sending a batch to
// sending the next — is c × P ÷ throughput. The proposer's INFO stage sums
// (group/committime.go) split the part of it spent between Propose and the
// answer:
//
//	queued        waiting for the disk gate, a free slot or stragglers
//	leader's log  the leader's append and its fsync
//	quorum+apply  a follower's append (in a cluster), the commit and the apply
//
// and, inside the leader's log, what one WAL sync took on average (INFO
// log_wal_sync_usec_total ÷ the WAL's syncs): the disk's own share, so the
// rest of the append (raft's goroutine, Pebble's commit pipeline) shows as
// the difference. An entry is one sync, and a batch rides in one entry, so
// the two compare directly;
// and the rest of the cycle is outside the log: writing the replies, the
// network both ways, the client, and reading and parsing its next batch. A
// cycle dominated by "outside" is short of CPU or scheduling, not of disk.

// stageSums are the proposer's cumulative per-batch stage sums, in µs, and
// its WAL's cumulative sync time (µs) and syncs.
type stageSums struct {
	batches, queueUs, logUs, quorumUs uint64
	syncUs, syncs                     uint64
	// applyUs is the time the leader's state machine spent applying
	// entries (INFO fsm_apply_usec_total), applied the requests it
	// applied (fsm_ops_applied): one goroutine does all of it, so its
	// busy share is the ceiling of a load whose apply is heavy (scripts).
	applyUs, applied uint64
}

// parseStageSums reads them from INFO's raft and persistence sections (zero
// when absent: an older server).
func parseStageSums(info map[string]string) stageSums {
	return stageSums{
		batches:  parseUintField(info["raft_batches_timed"]),
		queueUs:  parseUintField(info["raft_batch_queue_usec_total"]),
		logUs:    parseUintField(info["raft_batch_local_log_usec_total"]),
		quorumUs: parseUintField(info["raft_batch_quorum_apply_usec_total"]),
		syncUs:   parseUintField(info["log_wal_sync_usec_total"]),
		syncs:    parseUintField(info["log_wal_syncs_direct"]) + parseUintField(info["log_wal_syncs_ordinary"]),
		applyUs:  parseUintField(info["fsm_apply_usec_total"]),
		applied:  parseUintField(info["fsm_ops_applied"]),
	}
}

// since is the run's share of the sums. A leadership change resets nothing
// (the sums are the proposer's, and only the leader proposes), but a sample
// taken on another node would make after smaller than before: that gives
// zero, shown as unknown.
func (s stageSums) since(before stageSums) stageSums {
	if s.batches < before.batches || s.queueUs < before.queueUs || s.logUs < before.logUs || s.quorumUs < before.quorumUs ||
		s.syncUs < before.syncUs || s.syncs < before.syncs || s.applyUs < before.applyUs || s.applied < before.applied {
		return stageSums{}
	}
	return stageSums{s.batches - before.batches, s.queueUs - before.queueUs, s.logUs - before.logUs, s.quorumUs - before.quorumUs,
		s.syncUs - before.syncUs, s.syncs - before.syncs, s.applyUs - before.applyUs, s.applied - before.applied}
}

func (s stageSums) plus(o stageSums) stageSums {
	return stageSums{s.batches + o.batches, s.queueUs + o.queueUs, s.logUs + o.logUs, s.quorumUs + o.quorumUs,
		s.syncUs + o.syncUs, s.syncs + o.syncs, s.applyUs + o.applyUs, s.applied + o.applied}
}

// applyCell is the state machine's apply per request in µs and, at rps
// requests a second, the share of the run its goroutine was applying:
// "5.70 µs, 60 %". "-" when the server did not count it (an older one).
func (s stageSums) applyCell(rps float64) string {
	if s.applied == 0 || s.applyUs == 0 {
		return "-"
	}
	per := float64(s.applyUs) / float64(s.applied)
	return fmt.Sprintf("%.2f µs, %.0f %%", per, per*rps/1e4)
}

// syncMs is one WAL sync's mean time in ms; ok is false when none was
// timed (no syncs, or a server without the counter).
func (s stageSums) syncMs() (float64, bool) {
	if s.syncs == 0 || s.syncUs == 0 {
		return 0, false
	}
	return float64(s.syncUs) / float64(s.syncs) / 1000, true
}

// perBatchMs is what an average batch spent in each stage, in ms; ok is
// false when no batch was timed.
func (s stageSums) perBatchMs() (queue, log, quorum float64, ok bool) {
	if s.batches == 0 {
		return 0, 0, 0, false
	}
	n := float64(s.batches) * 1000
	return float64(s.queueUs) / n, float64(s.logUs) / n, float64(s.quorumUs) / n, true
}

// clientCycleMs is a closed-loop client's cycle in ms: clients × pipeline ÷
// throughput.
func clientCycleMs(w workload, rps float64) float64 {
	if rps <= 0 {
		return 0
	}
	return float64(w.clients*w.pipeline) / rps * 1000
}

// stagesMarkdown is the table of where a request's time went, for the
// Redcell rows of ms whose runs timed batches; empty when there are none.
func stagesMarkdown(ms []measurement) string {
	var rows strings.Builder
	for _, m := range ms {
		cells, ok := stageCells(clientCycleMs(m.work, m.median.RPS), m.median.RPS, m.median.Batching)
		if !ok {
			continue
		}
		fmt.Fprintf(&rows, "| %s | %s | %s |\n", m.work, m.kind, cells)
	}
	if rows.Len() == 0 {
		return ""
	}
	return stagesIntro + "\n\n" +
		"| scenario | server | client cycle | queued | leader's log | of it, one WAL sync | quorum + apply | outside the log | apply per request, busy |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n" + rows.String()
}

// stagesIntro says what the columns of a stages table are.
const stagesIntro = "Where a client's cycle went (ms; a cycle is clients × pipeline ÷ rps, the stages are the leader's INFO per-batch sums over the run, `group/committime.go`): " +
	"*queued* for the disk gate or a slot, the *leader's log* append with its fsync (*of it, one WAL sync*: the mean time of the leader's WAL syncs, the disk's share), *quorum + apply* (a follower's append in a cluster, the commit, the apply), " +
	"and *outside the log*: the replies' writes, the network, the client, and reading its next requests. " +
	"*apply per request, busy*: the leader's state machine's time per request (INFO fsm_apply_usec_total ÷ fsm_ops_applied), and the share of the run its one goroutine spent applying: near 100 % it, not the disk or the clients, bounds the row."

// stageCells are the seven stage columns of one row (client cycle, queued,
// leader's log, one WAL sync, quorum + apply, outside the log, apply) for a
// client cycle of cycleMs at rps requests a second; ok is false when b
// timed no batch.
func stageCells(cycleMs, rps float64, b *batching) (string, bool) {
	if b == nil {
		return "", false
	}
	q, l, c, ok := b.stages.perBatchMs()
	if !ok || cycleMs == 0 {
		return "", false
	}
	sync := "-"
	if ms, ok := b.stages.syncMs(); ok {
		sync = fmt.Sprintf("%.3f", ms)
	}
	return fmt.Sprintf("%.3f | %.3f | %.3f | %s | %.3f | %.3f | %s", cycleMs, q, l, sync, c, max(cycleMs-q-l-c, 0), b.stages.applyCell(rps)), true
}
