package commands

import (
	"bytes"
	"strconv"

	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/request"
)

// The error vocabulary of Redcell, in one place. Texts are the protocol: the
// Redis prefixes (ERR, WRONGTYPE, NOPROTO, NOAUTH, WRONGPASS, TRYAGAIN,
// CLUSTERDOWN) are read by clients, and redis-cell's texts (no ERR prefix) are
// read by its users' code. Every text here appears verbatim in the spec,
// except those marked as Redcell's own.
const (
	ErrSyntax        = string(arg.ErrSyntax)
	ErrNotInteger    = string(arg.ErrNotInteger)
	ErrNoProto       = "NOPROTO unsupported protocol version"
	ErrProtoNotInt   = "ERR Protocol version is not an integer or out of range"
	ErrNoAuth        = "NOAUTH Authentication required."
	ErrWrongPass     = "WRONGPASS invalid username-password pair or user is disabled."
	ErrAuthNoPass    = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	ErrDBIndex       = "ERR DB index is out of range"
	ErrClientName    = "ERR Client names cannot contain spaces, newlines or special characters."
	ErrDebugDisabled = "ERR DEBUG command not allowed"
	ErrExecNoMulti   = "ERR EXEC without MULTI"
	// Transactions, as Redis 7 answers them.
	ErrDiscardNoMulti = "ERR DISCARD without MULTI"
	ErrMultiNested    = "ERR MULTI calls can not be nested"
	ErrExecAbort      = "EXECABORT Transaction discarded because of previous errors."
	ErrWatchInMulti   = "ERR WATCH inside MULTI is not allowed"
	// ErrLoading answers, while the node loads its state after a restart,
	// every command the table does not flag "loading", as Redis does.
	ErrLoading = "LOADING Redis is loading the dataset in memory"

	// Replication and availability (see spec/replication.md), one per batch
	// failure of package request; the server maps each explicitly.
	ErrClusterDown = "CLUSTERDOWN No leader is known: the cluster cannot decide now"     // request.ErrNoLeader
	ErrNotReady    = "TRYAGAIN The leader is not ready yet"                              // request.ErrNotReady
	ErrStopped     = "TRYAGAIN The server is shutting down"                              // request.ErrShutdown
	ErrInternal    = "ERR internal error: the state machine stopped; see the server log" // request.ErrStateMachine
	// ErrOutcomeUnknown answers request.ErrOutcomeUnknown: leadership
	// changed after the write was proposed, so it may still be committed
	// and applied, or not. Unlike the others it does not say "nothing
	// happened": a client that retries may be counted twice, and one that
	// does not retry may not have been counted. The server also answers it
	// for an error it does not recognise, which cannot promise either.
	ErrOutcomeUnknown = "TRYAGAIN Leadership changed before the write was confirmed: it may or may not have been applied"

	// ErrDiskFullPrefix opens the answer to request.ErrDiskFull (see
	// DiskFull): Redis answers MISCONF when it cannot persist, and clients
	// and operators know that word.
	ErrDiskFullPrefix = "MISCONF Redcell cannot write its log: "
)

// The Redis Cluster protocol's argument errors (CLUSTER, COMMAND GETKEYS),
// Redis 7.0's texts verbatim. UnknownNode adds the one with the node's ID.
const (
	ErrInvalidSlot        = "ERR Invalid slot"
	ErrInvalidSlotOrCount = "ERR Invalid slot or number of keys"
	ErrNotAMaster         = "ERR The specified node is not a master"
	ErrGetKeysNoCommand   = "ERR Invalid command specified"
	ErrGetKeysNoKeys      = "ERR The command has no key arguments"
	ErrGetKeysArity       = "ERR Invalid number of arguments specified for command"
	ErrGetKeysInvalid     = "ERR Invalid arguments specified for command"
)

// UnknownNode answers CLUSTER REPLICAS of an ID the cluster does not have,
// as Redis 7.0 words it (the ID as sent, without newlines).
func UnknownNode(id []byte) string {
	return "ERR Unknown node " + string(mapNewlines(append([]byte(nil), cutNUL(id)...)))
}

// Authentication (Redis 7.0's texts, verbatim).
const (
	// ErrHelloNoAuth answers HELLO without AUTH on a connection that must
	// authenticate first.
	ErrHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	// ErrMaxClients is written to a connection refused because maxclients
	// are connected; the server then closes it.
	ErrMaxClients = "ERR max number of clients reached"
)

// DiskFull is the error reply to a write refused because the leader's log
// disk is below its reserve: what failed and where (detail, from the
// leader), and what still works.
func DiskFull(detail string) string {
	return ErrDiskFullPrefix + SanitizeErrorText([]byte(detail)) +
		"; commands that change state are refused until space returns (reads work)"
}

// Removed is the reply to every request that needs the cluster on a node
// that was taken out of its configuration (request.ErrRemoved; Redcell's
// own text). CLUSTERDOWN because this node cannot decide, as with no
// leader; but unlike "no leader" it will not pass, so it says what the
// operator must do. Clients that retry CLUSTERDOWN should be pointed at
// another node.
func Removed(nodeID string) string {
	return "CLUSTERDOWN This node (" + SanitizeErrorText([]byte(nodeID)) + ") was removed from the cluster: " +
		"it decides nothing and its state is no longer updated; send requests to a member, " +
		"and stop this node, or empty its data dir and start it with --join <member> to add it back"
}

// FailureReply is the Redis error a client gets for a batch failure (package
// request's *Failure): the one place where a failure code becomes a reply.
// nil, and a code this build does not know, answer as FailOutcomeUnknown:
// the server cannot promise that nothing happened.
func FailureReply(f *request.Failure) string {
	if f == nil {
		return ErrOutcomeUnknown
	}
	switch f.Code {
	case request.FailNoLeader, request.FailNotLeader:
		return ErrClusterDown
	case request.FailNotReady:
		return ErrNotReady
	case request.FailShutdown:
		return ErrStopped
	case request.FailStateMachine:
		return ErrInternal
	case request.FailRemoved:
		id := f.Detail
		if id == "" {
			id = "?"
		}
		return Removed(id)
	case request.FailDiskFull:
		detail := f.Detail
		if detail == "" {
			detail = "the leader's log disk is full"
		}
		return DiskFull(detail)
	case request.FailRefused, request.FailUnknownGroup:
		return "ERR " + SanitizeErrorText([]byte(f.Error()))
	}
	return ErrOutcomeUnknown
}

// ResultErrText is the reply to a request the state machine answered with
// a deterministic error code (request.Result of KindError): the text its
// descriptor gives it (request/codes.go: WRONGTYPE, OOM, an op the state
// machine refused as invalid, and each family's own), ErrInternal for a
// code this build does not describe.
func ResultErrText(code request.ErrCode) string {
	if text := code.Text(); text != "" {
		return text
	}
	return ErrInternal
}

// ResultError is the reply to a result of KindError: ResultErrText of its
// code, except for a request refused for the cluster's feature level,
// whose reply names the command and both levels
// (request.FeatureLevelText).
func ResultError(r *request.Result) string {
	if r.Err == request.ErrFeatureLevel {
		return request.FeatureLevelText(r)
	}
	return ResultErrText(r.Err)
}

// RequestTooLarge answers a write request that would take n bytes of the
// replicated log, more than MaxRequestLogBytes (Redcell's own text).
func RequestTooLarge(n int) string {
	return "ERR request too large for the replicated log: " + strconv.Itoa(n) +
		" bytes, the limit is " + strconv.Itoa(MaxRequestLogBytes)
}

// TransactionTooLarge answers a command that would make a queued
// transaction hold n bytes, more than MaxRequestLogBytes: its requests are
// one batch of one log entry (Redcell's own text).
func TransactionTooLarge(n int) string {
	return "ERR transaction too large: " + strconv.Itoa(n) +
		" bytes queued, the limit is " + strconv.Itoa(MaxRequestLogBytes)
}

// redis-cell's errors carry its own prefix and no ERR.
const (
	cellPrefix  = "Cell error: Store error: "
	ErrCellZero = cellPrefix + "Zero rates are not supported"
)

// CellUsage is redis-cell's arity error for name (lower case).
func CellUsage(name string) string {
	return cellPrefix + "Usage: " + name + " <key> <max_burst> <count per period> <period> [<quantity>]"
}

// CellNotInteger is redis-cell's integer error, echoing the argument. Redis
// sanitises a module's error on the whole message, prefix and echoed
// argument together: so a CR or LF that starts the argument is inside the
// message and becomes a space, while one that ends it is trimmed.
func CellNotInteger(arg []byte) string {
	msg := make([]byte, 0, len(cellNotIntegerPrefix)+len(arg))
	msg = append(append(msg, cellNotIntegerPrefix...), arg...)
	return SanitizeErrorText(msg)
}

const cellNotIntegerPrefix = cellPrefix + "Couldn't parse as integer: "

// WrongArgs is Redis's arity error; name is the lower-case command name, or
// "container|sub" for a subcommand.
func WrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// UnknownSubcommand answers a container command (CLIENT, CONFIG, ...) called
// with a subcommand it does not have. container is upper case.
func UnknownSubcommand(sub []byte, container string) string {
	name := mapNewlines(append([]byte(nil), truncate(cutNUL(sub), 128)...))
	return "ERR unknown subcommand '" + string(name) + "'. Try " + container + " HELP."
}

// SubcommandSyntax is Redis 7's addReplySubcommandSyntaxError: a known
// subcommand with arguments its handler does not take (SLOWLOG GET 1 2).
func SubcommandSyntax(sub []byte, container string) string {
	name := mapNewlines(append([]byte(nil), truncate(cutNUL(sub), 128)...))
	return "ERR unknown subcommand or wrong number of arguments for '" + string(name) + "'. Try " + container + " HELP."
}

// UnknownCommand is Redis 7's text for an unknown command: the name cut at
// 128 bytes, then the arguments quoted while the list is shorter than 128
// bytes, each cut to what is left of those 128. Name and arguments are C
// strings there (cut at a NUL each); CR/LF become spaces.
func UnknownCommand(args [][]byte) string {
	b := []byte("ERR unknown command '")
	b = append(b, truncate(cutNUL(args[0]), 128)...)
	b = append(b, "', with args beginning with: "...)
	n := 0
	for _, a := range args[1:] {
		if n >= 128 {
			break
		}
		a = truncate(cutNUL(a), 128-n)
		b = append(b, '\'')
		b = append(b, a...)
		b = append(b, '\'', ' ')
		n += len(a) + 3
	}
	return string(mapNewlines(b))
}

func cutNUL(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// mapNewlines turns CR and LF into spaces in place (sdsmapchars).
func mapNewlines(b []byte) []byte {
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return b
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// SanitizeErrorText makes bytes safe inside a RESP error line the way Redis
// does for error replies: the text stops at the first NUL, CR/LF at both ends
// are trimmed, and CR or LF inside become spaces.
func SanitizeErrorText(b []byte) string {
	b = bytes.Trim(cutNUL(b), "\r\n")
	return string(mapNewlines(append([]byte(nil), b...)))
}
