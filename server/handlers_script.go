package server

import "github.com/redcell/redcell/commands"

// SCRIPT <LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC|SYNC] | KILL | HELP>
// LOAD, EXISTS and FLUSH reach the replicated script cache: execCommand
// runs them as keyspace commands (their subcommand specs carry request
// codes). This handler answers the rest: KILL, which never finds a script
// to kill (a script stops at its instruction budget, see package
// scripting), HELP, and an unknown subcommand.
func cmdScript(c *conn, s *commands.Spec, args [][]byte) {
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "SCRIPT"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	switch sub.Name {
	case "script|kill":
		c.fail(commands.ErrNotBusy)
	case "script|help":
		writeHelp(c, "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"EXISTS <sha1> [<sha1> ...]",
			"    Return information about the existence of the scripts in the script cache.",
			"FLUSH [ASYNC|SYNC]",
			"    Flush the Lua scripts cache (on every node: the cache is replicated).",
			"KILL",
			"    Kill the currently executing Lua script (there never is one: scripts stop at their instruction budget).",
			"LOAD <script>",
			"    Load a script into the scripts cache without executing it.",
			"HELP",
			"    Prints this help.")
	default:
		c.fail(commands.UnknownSubcommand(args[1], "SCRIPT"))
	}
}
