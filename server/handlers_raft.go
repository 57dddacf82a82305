package server

import (
	"errors"
	"strconv"
	"strings"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// RAFT <JOIN node_id address | REMOVE node_id | TRANSFER [node_id] |
// SNAPSHOT | INFO | DIGEST [group] | HELP>
// Cluster administration. JOIN, REMOVE and TRANSFER change the cluster and
// are carried out by the leader wherever they are sent (+OK once committed);
// SNAPSHOT (an integer: the snapshot's index), INFO (text) and DIGEST
// ([applied_index, hex SHA-256 of the state] of one group) concern the node
// asked.
func cmdRaft(c *conn, s *commands.Spec, args [][]byte) {
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "RAFT"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	name := strings.TrimPrefix(sub.Name, "raft|")
	switch name {
	case "help":
		writeHelp(c, "RAFT <subcommand> [<arg> ...]. Subcommands are:",
			"JOIN <node_id> <address>", "    Add a node as a non-voter; it is promoted to voter once it has caught up.",
			"REMOVE <node_id>", "    Remove a node from the cluster.",
			"TRANSFER [<node_id>]", "    Hand leadership to node_id, or to the most up-to-date voter.",
			"SNAPSHOT", "    Snapshot this node's state now; answers the snapshot's index.",
			"INFO", "    This node's view of the cluster: role, term, leader, indexes, members.",
			"DIGEST [<group>]", "    [applied_index, SHA-256 of the replicated state at that index] of this node's group (0 unless named).",
			"HELP", "    Print this help.")
		return
	case "info":
		var b strings.Builder
		c.s.infoSection(&b, "replication")
		b.WriteString("\r\n")
		c.s.infoSection(&b, "raft")
		c.w.Verbatim(b.String())
		return
	}
	words := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		words = append(words, string(a))
	}
	text, err := c.s.cfg.Backend.Admin(AdminOp(name), words)
	if err != nil {
		c.fail(adminErrText(err))
		return
	}
	switch name {
	case "snapshot":
		idx, perr := strconv.ParseInt(text, 10, 64)
		if perr != nil {
			c.fail(commands.ErrInternal)
			return
		}
		c.w.Int(idx)
	case "digest":
		idx, sum, ok := strings.Cut(text, " ")
		n, perr := strconv.ParseInt(idx, 10, 64)
		if !ok || perr != nil {
			c.fail(commands.ErrInternal)
			return
		}
		c.w.Array(2)
		c.w.Int(n)
		c.w.BulkString(sum)
	default:
		c.w.OK()
	}
}

// adminErrText answers a failed administration command: a batch failure as
// for any request (a refusal as an ERR with its reason), anything else as
// an ERR with the reason.
func adminErrText(err error) string {
	var f *request.Failure
	if errors.As(err, &f) {
		return commands.FailureReply(f)
	}
	return "ERR " + commands.SanitizeErrorText([]byte(err.Error()))
}
