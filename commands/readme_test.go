package commands

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The README's "Command reference" is the users' list of what the server
// knows. These tests hold it to the command table, so that a command added
// to (or removed from) the table without its row fails here instead of
// leaving the README behind.

// readmeSection is the heading of the README's command reference table.
const readmeSection = "## Command reference"

// codeSpan matches one `code span` of a table cell.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// readmeCommands parses the command reference section of a README: each row
// of its table is "| family | commands | what they do |", and each code span
// of the commands cell names a command by its first word; for a container
// command (CONFIG, CLIENT, …) the second word lists its subcommands
// separated by "|" (escaped as "\|" in the Markdown table). It returns the
// subcommands listed per command name (lower case), and the names listed
// more than once.
func readmeCommands(readme string) (listed map[string]map[string]bool, repeated []string, ok bool) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == readmeSection {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, nil, false
	}
	listed = map[string]map[string]bool{}
	header := true
	for _, l := range lines[start:] {
		if strings.HasPrefix(l, "## ") {
			break
		}
		if !strings.HasPrefix(l, "|") {
			continue
		}
		if header || strings.HasPrefix(l, "|---") {
			header = false // the first row of the table is its header
			continue
		}
		cells := splitRow(l)
		if len(cells) < 3 {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[1], -1) {
			words := strings.Fields(strings.ReplaceAll(m[1], `\|`, "|"))
			if len(words) == 0 {
				continue
			}
			name := strings.ToLower(words[0])
			if _, seen := listed[name]; seen {
				repeated = append(repeated, name)
			}
			subs := map[string]bool{}
			if len(words) > 1 {
				for _, s := range strings.Split(words[1], "|") {
					subs[strings.ToLower(s)] = true
				}
			}
			listed[name] = subs
		}
	}
	return listed, repeated, true
}

// splitRow splits a Markdown table row into its cells, leaving "\|" (a bar
// inside a cell) alone.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// readmeProblems lists every way the README's command reference disagrees
// with specs: a command or subcommand missing from it, one it names that
// the server does not know, or a command listed twice.
func readmeProblems(readme string, specs []*Spec) []string {
	listed, repeated, ok := readmeCommands(readme)
	if !ok {
		return []string{"the README has no " + readmeSection + " section"}
	}
	var problems []string
	for _, name := range repeated {
		problems = append(problems, "lists "+strings.ToUpper(name)+" more than once")
	}
	known := map[string]*Spec{}
	for _, s := range specs {
		known[s.Name] = s
		subs, ok := listed[s.Name]
		if !ok {
			problems = append(problems, "lacks "+strings.ToUpper(s.Name)+
				" (add it to the row of its family, with a one-line description)")
			continue
		}
		want := map[string]bool{}
		for _, sub := range s.Subs {
			want[strings.TrimPrefix(sub.Name, s.Name+"|")] = true
		}
		for sub := range want {
			if !subs[sub] {
				problems = append(problems, "lacks the subcommand "+strings.ToUpper(s.Name+" "+sub))
			}
		}
		for sub := range subs {
			if !want[sub] {
				problems = append(problems, "names "+strings.ToUpper(s.Name+" "+sub)+", which the server does not know")
			}
		}
	}
	for name := range listed {
		if known[name] == nil {
			problems = append(problems, "names "+strings.ToUpper(name)+", which the server does not know")
		}
	}
	sort.Strings(problems)
	return problems
}

func TestReadmeCommandReferenceMatchesTheCommandTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatalf("reading the README: %v", err)
	}
	for _, p := range readmeProblems(string(readme), All()) {
		t.Errorf("README.md's command reference %s", p)
	}
}

// TestReadmeProblemsFindsEachDisagreement: the check above can fail, and says
// which command is wrong.
func TestReadmeProblemsFindsEachDisagreement(t *testing.T) {
	specs := []*Spec{
		{Name: "get"},
		{Name: "set"},
		{Name: "config", Subs: []*Spec{{Name: "config|get"}, {Name: "config|set"}}},
	}
	const head = "# X\n\n" + readmeSection + "\n\n| family | commands | what they do |\n|---|---|---|\n"
	cases := []struct {
		name, rows string
		want       []string
	}{
		{"agrees", "| Strings | `GET`, `SET` | read; write |\n| Server | `CONFIG GET\\|SET` | settings |\n", nil},
		{"a command missing", "| Strings | `GET` | read |\n| Server | `CONFIG GET\\|SET` | settings |\n",
			[]string{"lacks SET (add it to the row of its family, with a one-line description)"}},
		{"an unknown command", "| Strings | `GET`, `SET`, `GETX` | read |\n| Server | `CONFIG GET\\|SET` | settings |\n",
			[]string{"names GETX, which the server does not know"}},
		{"a subcommand missing and one unknown", "| Strings | `GET`, `SET` | read |\n| Server | `CONFIG GET\\|REWRITE` | settings |\n",
			[]string{"lacks the subcommand CONFIG SET", "names CONFIG REWRITE, which the server does not know"}},
		{"listed twice", "| Strings | `GET`, `SET`, `GET` | read |\n| Server | `CONFIG GET\\|SET` | settings |\n",
			[]string{"lists GET more than once"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readmeProblems(head+c.rows+"\n## Next\n\n| x | `NOTACOMMAND` | y |\n", specs)
			want := append([]string(nil), c.want...)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	if got := readmeProblems("# X\n", specs); len(got) != 1 {
		t.Errorf("a README without the section: %v", got)
	}
}
