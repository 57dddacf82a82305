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
	}
}

// since is the run's share of the sums. A leadership change resets nothing
// (the sums are the proposer's, and only the leader proposes), but a sample
// taken on another node would make after smaller than before: that gives
// zero, shown as unknown.
func (s stageSums) since(before stageSums) stageSums {
	if s.batches < before.batches || s.queueUs < before.queueUs || s.logUs < before.logUs || s.quorumUs < before.quorumUs ||
		s.syncUs < before.syncUs || s.syncs < before.syncs {
		return stageSums{}
	}
	return stageSums{s.batches - before.batches, s.queueUs - before.queueUs, s.logUs - before.logUs, s.quorumUs - before.quorumUs,
		s.syncUs - before.syncUs, s.syncs - before.syncs}
}

func (s stageSums) plus(o stageSums) stageSums {
	return stageSums{s.batches + o.batches, s.queueUs + o.queueUs, s.logUs + o.logUs, s.quorumUs + o.quorumUs,
		s.syncUs + o.syncUs, s.syncs + o.syncs}
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
		cells, ok := stageCells(clientCycleMs(m.work, m.median.RPS), m.median.Batching)
		if !ok {
			continue
		}
		fmt.Fprintf(&rows, "| %s | %s | %s |\n", m.work, m.kind, cells)
	}
	if rows.Len() == 0 {
		return ""
	}
	return stagesIntro + "\n\n" +
		"| scenario | server | client cycle | queued | leader's log | of it, one WAL sync | quorum + apply | outside the log |\n|---|---|---:|---:|---:|---:|---:|---:|\n" + rows.String()
}

// stagesIntro says what the columns of a stages table are.
const stagesIntro = "Where a client's cycle went (ms; a cycle is clients × pipeline ÷ rps, the stages are the leader's INFO per-batch sums over the run, `group/committime.go`): " +
	"*queued* for the disk gate or a slot, the *leader's log* append with its fsync (*of it, one WAL sync*: the mean time of the leader's WAL syncs, the disk's share), *quorum + apply* (a follower's append in a cluster, the commit, the apply), " +
	"and *outside the log*: the replies' writes, the network, the client, and reading its next requests."

// stageCells are the six stage columns of one row (client cycle, queued,
// leader's log, one WAL sync, quorum + apply, outside the log) for a client
// cycle of cycleMs; ok is false when b timed no batch.
func stageCells(cycleMs float64, b *batching) (string, bool) {
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
	return fmt.Sprintf("%.3f | %.3f | %.3f | %s | %.3f | %.3f", cycleMs, q, l, sync, c, max(cycleMs-q-l-c, 0)), true
}
