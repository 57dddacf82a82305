package commands

// ErrCrossSlot is Redis Cluster's refusal of an atomic unit whose keys hash
// to more than one slot (a script's KEYS, MSET, RENAME, a transaction with
// its watched keys), which a keyspace of several Raft groups refuses too:
// one log entry of one group decides a unit (request/routing.go).
const ErrCrossSlot = "CROSSSLOT Keys in request don't hash to the same slot"
