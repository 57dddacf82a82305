package commands

// The diagnostics commands Redis operators reach for first: SLOWLOG,
// LATENCY and MEMORY (server/slowlog.go, server/latency.go,
// server/memory.go). Names, arities, flags, ACL categories and docs are
// Redis 7.0.15's (COMMAND INFO and COMMAND DOCS of redis-server); the
// summaries say what Redcell measures where it differs.
//
// MEMORY USAGE reads a key, but it is a Connection command: the server
// answers it from this node's own state machine (request.MemoryUsage
// through Backend.ReadLocal), so it never joins a pipeline's log entry or
// a transaction's batch and its code never reaches the Raft log. Its flags
// are Redis's as they are (OwnFlags: "readonly" without the Read class) and
// its key position is Redis's (2), for cluster-aware clients.
var diagnosticsSpecs = []*Spec{
	{Name: "slowlog", Arity: -2, Flags: []string{}, Group: "server", Since: "2.2.12", Complexity: "Depends on subcommand.",
		ACL: []string{"@slow"}, Summary: "A container for slow log commands.", Subs: []*Spec{
			{Name: "slowlog|get", Arity: -2, Flags: []string{"admin", "loading", "stale"}, Group: "server", Since: "2.2.12",
				Complexity: "O(N) where N is the number of entries returned", ACL: []string{"@admin", "@slow", "@dangerous"},
				Summary: "Returns the slow log's entries: commands whose time from dispatch to reply (a write's commit included) reached slowlog-log-slower-than.",
				Args:    []Arg{{Name: "count", Type: "integer", Optional: true}}},
			{Name: "slowlog|len", Arity: 2, Flags: []string{"admin", "loading", "stale"}, Group: "server", Since: "2.2.12", Complexity: "O(1)",
				ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns the number of entries in the slow log."},
			{Name: "slowlog|reset", Arity: 2, Flags: []string{"admin", "loading", "stale"}, Group: "server", Since: "2.2.12",
				Complexity: "O(N) where N is the number of entries in the slowlog", ACL: []string{"@admin", "@slow", "@dangerous"},
				Summary: "Clears all entries from the slow log."},
			{Name: "slowlog|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "6.2.0", Complexity: "O(1)",
				ACL: []string{"@slow"}, Summary: "Shows helpful text about the different subcommands."},
		}},
	{Name: "latency", Arity: -2, Flags: []string{}, Group: "server", Since: "2.8.13", Complexity: "Depends on subcommand.",
		ACL: []string{"@slow"}, Summary: "A container for latency diagnostics commands.", Subs: []*Spec{
			{Name: "latency|doctor", Arity: 2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(1)",
				ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns a human readable latency analysis report."},
			{Name: "latency|graph", Arity: 3, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(1)",
				ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns a latency graph for the event.",
				Args: []Arg{{Name: "event", Type: "string"}}},
			{Name: "latency|histogram", Arity: -2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "7.0.0",
				Complexity: "O(N) where N is the number of commands with latency information being retrieved.", ACL: []string{"@admin", "@slow", "@dangerous"},
				Summary: "Returns the cumulative distribution of latencies of a subset of commands or all.",
				Args:    []Arg{{Name: "command", Type: "string", Optional: true, Multiple: true}}},
			{Name: "latency|history", Arity: 3, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(1)",
				ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns timestamp-latency samples for the event (command, fast-command).",
				Args: []Arg{{Name: "event", Type: "string"}}},
			{Name: "latency|latest", Arity: 2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(1)",
				ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns the latest latency samples for all events."},
			{Name: "latency|reset", Arity: -2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(1)",
				ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Resets latency data for one or more events.",
				Args: []Arg{{Name: "event", Type: "string", Optional: true, Multiple: true}}},
			{Name: "latency|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(1)",
				ACL: []string{"@slow"}, Summary: "Shows helpful text about the different subcommands."},
		}},
	{Name: "memory", Arity: -2, Flags: []string{}, Group: "server", Since: "4.0.0", Complexity: "Depends on subcommand.",
		ACL: []string{"@slow"}, Summary: "A container for memory diagnostics commands.", Subs: []*Spec{
			{Name: "memory|usage", Arity: -3, Flags: []string{"readonly"}, OwnFlags: true, FirstKey: 2, LastKey: 2, Step: 1, Group: "server", Since: "4.0.0",
				Complexity: "O(1)", ACL: []string{"@read", "@slow"},
				Summary: "Estimates the bytes a key takes in this node's keyspace (its record and index slot); nil when it does not exist. SAMPLES is accepted and ignored: nothing is sampled.",
				Args:    []Arg{{Name: "key", Type: "key"}, {Name: "count", Type: "integer", Token: "SAMPLES", Optional: true}}},
			{Name: "memory|stats", Arity: 2, Flags: []string{}, Group: "server", Since: "4.0.0", Complexity: "O(1)",
				ACL: []string{"@slow"}, Summary: "Returns details of this node's memory usage, in Redis's fields."},
			{Name: "memory|doctor", Arity: 2, Flags: []string{}, Group: "server", Since: "4.0.0", Complexity: "O(1)",
				ACL: []string{"@slow"}, Summary: "Returns a report of memory problems."},
			{Name: "memory|malloc-stats", Arity: 2, Flags: []string{}, Group: "server", Since: "4.0.0", Complexity: "Depends on how much memory is allocated, could be slow",
				ACL: []string{"@slow"}, Summary: "Returns the Go runtime's memory statistics (Redcell has no jemalloc)."},
			{Name: "memory|purge", Arity: 2, Flags: []string{}, Group: "server", Since: "4.0.0", Complexity: "Depends on how much memory is allocated, could be slow",
				ACL: []string{"@slow"}, Summary: "Returns freed memory to the operating system (the Go runtime's FreeOSMemory)."},
			{Name: "memory|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "4.0.0", Complexity: "O(1)",
				ACL: []string{"@slow"}, Summary: "Shows helpful text about the different subcommands."},
		}},
}
