package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
)

// TestEveryConnectionCommandHasAHandler: conn.exec calls handlers[name] for
// every Connection-class command; a missing entry would panic on a nil
// function. And no handler may exist for a command the table does not route
// to it.
func TestEveryConnectionCommandHasAHandler(t *testing.T) {
	routed := map[string]bool{}
	for _, s := range commands.All() {
		if s.Class != commands.Connection {
			continue
		}
		routed[s.Name] = true
		if handlers[s.Name] == nil {
			t.Errorf("Connection-class command %q has no handler in the handlers map", s.Name)
		}
	}
	for name := range handlers {
		if !routed[name] {
			t.Errorf("handler %q is never called: the table has no Connection-class command of that name", name)
		}
	}
}

// TestEverySubcommandAnswersOnce sends every subcommand of every container
// with filler arguments up to its arity, then PING: exactly one reply must
// come before the PONG. A subcommand in the table that its handler's switch
// forgets would answer nothing and shift every later reply.
func TestEverySubcommandAnswersOnce(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	for _, s := range commands.All() {
		for _, sub := range s.Subs {
			container, name, _ := strings.Cut(sub.Name, "|")
			args := []string{strings.ToUpper(container), strings.ToUpper(name)}
			arity := sub.Arity
			if arity < 0 {
				arity = -arity
			}
			for len(args) < arity {
				args = append(args, "x")
			}
			c.send(encodeCmd(args...) + encodeCmd("PING", "sentinel"))
			first := c.reply()
			if first == "$sentinel" {
				t.Errorf("%q: no reply at all", args)
				continue
			}
			if strings.Contains(first, "unknown subcommand") || strings.Contains(first, "wrong number of arguments") {
				t.Errorf("%q: %s", args, first)
			}
			if second := c.reply(); second != "$sentinel" {
				t.Fatalf("%q: more than one reply: %s then %s", args, first, second)
			}
		}
	}
}

// TestCommandInfo checks COMMAND, COMMAND COUNT and COMMAND INFO against the
// table: Redis 7's ten fields, the true arity and key positions, and the
// subcommands nested in the same form.
func TestCommandInfo(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	all := commands.All()
	if got := c.do("COMMAND", "COUNT"); got != ":"+strconv.Itoa(len(all)) {
		t.Errorf("COMMAND COUNT = %s, want %d", got, len(all))
	}
	if r := c.replyTreeOf("COMMAND"); r.typ != '*' || len(r.elems) != len(all) {
		t.Errorf("COMMAND: %d entries, want %d", len(r.elems), len(all))
	}
	if r := c.replyTreeOf("COMMAND", "LIST"); len(r.elems) != len(all) {
		t.Errorf("COMMAND LIST: %d names, want %d", len(r.elems), len(all))
	}
	for _, s := range all {
		r := c.replyTreeOf("COMMAND", "INFO", strings.ToUpper(s.Name))
		if r.typ != '*' || len(r.elems) != 1 {
			t.Errorf("COMMAND INFO %s = %s", s.Name, r)
			continue
		}
		checkCommandInfo(t, r.elems[0], s)
	}
	if got := c.do("COMMAND", "INFO", "nosuchcommand", "ping"); !strings.HasPrefix(got, "*[*nil *[$ping :-1 ") {
		t.Errorf("COMMAND INFO nosuchcommand ping = %s", got)
	}
	if r := c.replyTreeOf("COMMAND", "INFO", "client|setname"); len(r.elems) != 1 || r.elems[0].elems[0].s != "client|setname" {
		t.Errorf("COMMAND INFO client|setname = %s", r)
	}
	if r := c.replyTreeOf("COMMAND", "DOCS", "cl.throttle"); len(r.elems) != 2 || r.elems[0].s != "cl.throttle" {
		t.Errorf("COMMAND DOCS cl.throttle = %s", r)
	}
}

func checkCommandInfo(t *testing.T, r reply, s *commands.Spec) {
	t.Helper()
	if r.typ != '*' || len(r.elems) != 10 {
		t.Errorf("%s: %d fields, want 10: %s", s.Name, len(r.elems), r)
		return
	}
	f := r.elems
	want := []string{"$" + s.Name, fmt.Sprintf(":%d", s.Arity)}
	got := []string{f[0].String(), f[1].String()}
	want = append(want, fmt.Sprintf(":%d", s.FirstKey), fmt.Sprintf(":%d", s.LastKey), fmt.Sprintf(":%d", s.Step))
	got = append(got, f[3].String(), f[4].String(), f[5].String())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: name/arity/keys %v, want %v", s.Name, got, want)
	}
	if len(f[2].elems) != len(s.Flags) {
		t.Errorf("%s: flags %s, want %v", s.Name, f[2], s.Flags)
	}
	keySpecs := 0
	if s.FirstKey > 0 || s.HasFlag("movablekeys") { // a script's: Redis's keynum spec
		keySpecs = 1
	}
	if len(f[8].elems) != keySpecs {
		t.Errorf("%s: %d key specs, want %d", s.Name, len(f[8].elems), keySpecs)
	}
	if len(f[9].elems) != len(s.Subs) {
		t.Errorf("%s: %d subcommands, want %d", s.Name, len(f[9].elems), len(s.Subs))
		return
	}
	for i, sub := range s.Subs {
		checkCommandInfo(t, f[9].elems[i], sub)
	}
}
