package server

import (
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
)

// While the backend is loading, every command that needs the keyspace —
// writes, reads, and RAFT's subcommands other than INFO and HELP — is
// answered LOADING at once with Redis's text, without reaching the backend;
// the commands the table flags "loading" (PING, INFO, HELLO, CLIENT ...,
// COMMAND ...) run. Errors Redis checks first (unknown command, wrong
// arity, unknown subcommand) keep their own replies. Replies stay in
// pipeline order, and once loading ends the same commands are served.
func TestLoadingAnswersLOADING(t *testing.T) {
	backend := &stubBackend{}
	backend.loading.Store(true)
	s := stubServer(t, backend)
	loading := "-" + commands.ErrLoading + "\r\n"

	got := runPipeline(t, s,
		[]string{"PING"},
		[]string{"CL.THROTTLE", "k", "15", "30", "60"},
		[]string{"CL.THROTTLE", "k"}, // redis-cell checks its own arity: LOADING first, as with a module
		[]string{"EXISTS", "k"},
		[]string{"DEL", "k"},
		[]string{"DBSIZE"},
		[]string{"FLUSHALL"},
		[]string{"CLIENT", "ID"},
		[]string{"ECHO", "x"},
		[]string{"RAFT", "SNAPSHOT"},
		[]string{"RAFT", "DIGEST"},
		[]string{"EXISTS"},            // arity first
		[]string{"NOSUCHCOMMAND"},     // unknown first
		[]string{"CLIENT", "NOSUCH"},  // unknown subcommand first
		[]string{"CLIENT", "ID", "x"}, // subcommand arity first
		[]string{"COMMAND", "COUNT"},
	)
	want := "+PONG\r\n" + loading + loading + loading + loading + loading + loading +
		":" // CLIENT ID
	if !strings.HasPrefix(got, want) {
		t.Fatalf("replies while loading start %q, want %q", got[:min(len(got), len(want)+20)], want)
	}
	rest := got[strings.Index(got[len(want):], "\r\n")+len(want)+2:]
	wantRest := []string{
		"$1\r\nx\r\n",
		loading, loading,
		"-ERR wrong number of arguments for 'exists' command\r\n",
		"-ERR unknown command 'NOSUCHCOMMAND', with args beginning with: \r\n",
	}
	for _, w := range wantRest {
		if !strings.HasPrefix(rest, w) {
			t.Fatalf("next reply %q, want %q", rest[:min(len(rest), 80)], w)
		}
		rest = rest[len(w):]
	}
	if !strings.HasPrefix(rest, "-ERR unknown subcommand") || !strings.Contains(rest, "-ERR wrong number of arguments for 'client|id' command\r\n:") {
		t.Fatalf("remaining replies %q: want the unknown-subcommand and arity errors, then COMMAND COUNT", rest)
	}
	if backend.proposed != 0 || backend.read != 0 {
		t.Fatalf("the backend saw %d writes and %d reads while loading", backend.proposed, backend.read)
	}

	// INFO says so, as ioredis's ready check expects.
	if info := runPipeline(t, s, []string{"INFO", "persistence"}); !strings.Contains(info, "loading:1\r\n") {
		t.Fatalf("INFO persistence while loading: %q", info)
	}

	backend.loading.Store(false)
	got = runPipeline(t, s, []string{"CL.THROTTLE", "k", "15", "30", "60"}, []string{"EXISTS", "k"}, []string{"INFO", "persistence"})
	if strings.Contains(got, "LOADING") || !strings.Contains(got, "loading:0\r\n") || backend.proposed != 2 || backend.riding != 1 {
		t.Fatalf("after loading: %q (backend: %d writes, %d reads)", got, backend.proposed, backend.read)
	}
}
