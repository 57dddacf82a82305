package conffile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// SplitArgs splits as Redis's sdssplitargs: the cases are the ones its
// quoting rules distinguish.
func TestSplitArgs(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"   \t ", nil, true},
		{"port 6380", []string{"port", "6380"}, true},
		{"  Port\t6380  ", []string{"Port", "6380"}, true},
		{`requirepass "a b\"c"`, []string{"requirepass", `a b"c`}, true},
		{`x "\n\t\r\b\a\x41\x4a\\\q"`, []string{"x", "\n\t\r\b\aAJ\\q"}, true},
		{`x "\x4"`, []string{"x", "x4"}, true}, // not two hex digits: \x is x
		{`x 'it\'s "raw" \n'`, []string{"x", `it's "raw" \n`}, true},
		{`x ""`, []string{"x", ""}, true},
		{`x ''`, []string{"x", ""}, true},
		{`ab"cd ef"`, []string{"abcd ef"}, true},
		{`x "unterminated`, nil, false},
		{`x 'unterminated`, nil, false},
		{`x "a"b`, nil, false}, // a closing quote must end the word
		{`x 'a'b`, nil, false},
		{"x a\x00b", []string{"x", "a"}, true}, // a C string ends at NUL
	} {
		got, ok := SplitArgs(tt.line)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// Quote is read back by SplitArgs as what it quoted, for any bytes.
func TestQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", `a b"c`, "\x00\x01\xff\\'\n\r\t\a\b#"} {
		for _, q := range []string{Quote(s), QuoteIfNeeded(s)} {
			got, ok := SplitArgs("x " + q)
			if !ok || len(got) != 2 || got[1] != s {
				t.Errorf("Quote(%q) = %s reads back as %q, %v", s, q, got, ok)
			}
		}
	}
	if got := Quote(`a b"c`); got != `"a b\"c"` { // what redis-server 7.0 wrote for CONFIG SET requirepass 'a b"c'
		t.Errorf("Quote = %s", got)
	}
}

func TestFormatMemory(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 3000: "3000", 1024: "1kb", 2 << 20: "2mb", 1 << 30: "1gb", 3<<30 + 1<<20: "3073mb"} {
		if got := FormatMemory(n); got != want {
			t.Errorf("FormatMemory(%d) = %s; want %s", n, got, want)
		}
	}
}

// Parse skips comments and blank lines, lower-cases names, numbers lines
// from 1, and reports unbalanced quotes with the line.
func TestParse(t *testing.T) {
	ds, err := Parse("f", "# comment\n\n  MaxMemory 100mb  \r\nclient-output-buffer-limit normal 0 0 0\n   # indented comment\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Directive{
		{File: "f", Line: 3, Text: "MaxMemory 100mb", Name: "maxmemory", Args: []string{"100mb"}},
		{File: "f", Line: 4, Text: "client-output-buffer-limit normal 0 0 0", Name: "client-output-buffer-limit", Args: []string{"normal", "0", "0", "0"}},
	}
	if !reflect.DeepEqual(ds, want) {
		t.Errorf("got %+v", ds)
	}
	_, err = Parse("f", "port 1\nmaxclients \"abc\n")
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || le.Reason != ReasonUnbalancedQuotes {
		t.Fatalf("unbalanced quotes: %v", err)
	}
	le.Version = "v1"
	// The text redis-server 7.0.15 prints for the same file, but for the
	// server's name.
	if want := "\n*** FATAL CONFIG FILE ERROR (Redcell v1) ***\nReading the configuration file, at line 2\n>>> 'maxclients \"abc'\nUnbalanced quotes in configuration line"; le.Error() != want {
		t.Errorf("error text %q", le.Error())
	}
}

// include reads another file in its place; errors there name that file;
// a file that includes itself is an error, not a stack overflow.
func TestReadInclude(t *testing.T) {
	dir := t.TempDir()
	main, inc, loop, bad := filepath.Join(dir, "main.conf"), filepath.Join(dir, "inc.conf"), filepath.Join(dir, "loop.conf"), filepath.Join(dir, "bad.conf")
	write(t, main, "port 1\ninclude "+inc+"\ntimeout 3\n")
	write(t, inc, "# included\nmaxclients 5\n")
	write(t, loop, "include "+loop+"\n")
	write(t, bad, "include "+filepath.Join(dir, "b*.conf")+"\n") // itself again, through a glob
	ds, err := Read(main)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.Name)
	}
	if strings.Join(got, ",") != "port,maxclients,timeout" || ds[1].File != inc || ds[1].Line != 2 {
		t.Errorf("got %+v", ds)
	}
	for _, f := range []string{loop, bad} {
		var le *LineError
		if _, err := Read(f); !errors.As(err, &le) || !strings.Contains(le.Error(), "too deeply") {
			t.Errorf("%s: %v", f, err)
		}
	}
	write(t, inc, "maxclients 'x\n")
	var le *LineError
	if _, err := Read(main); !errors.As(err, &le) || !le.Included || !strings.Contains(le.Error(), "at line 1 of "+inc) {
		t.Errorf("error in an include: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "missing.conf")); err == nil || !strings.Contains(err.Error(), "missing.conf") {
		t.Errorf("missing file: %v", err)
	}
}

func canonicalTest(name string) (string, bool) {
	switch name {
	case "loglevel":
		return "log-level", true
	case "port", "maxclients", "timeout", "maxmemory", "log-level", "protected-mode", "proto-max-bulk-len", "requirepass", "client-output-buffer-limit", "include":
		return name, true
	}
	return "", false
}

// Rewrite does what redis-server 7.0.15 did to the same files for the same
// CONFIG SETs (run by hand; the systemtest compares the two servers live):
// lines updated in place and normalised, a duplicate's later lines blanked,
// new non-default lines under the signature, the trailing newline's blank
// line kept, blank runs collapsed, unknown lines commented out.
func TestRewriteLikeRedis(t *testing.T) {
	settings := func(maxclients string, force bool) []Setting {
		return []Setting{
			{Name: "maxclients", Lines: []SettingLine{{"maxclients " + maxclients, force}}},
			{Name: "timeout", Lines: []SettingLine{{"timeout 7", true}}},
			{Name: "maxmemory", Lines: []SettingLine{{"maxmemory 0", false}}},
			{Name: "protected-mode", Lines: []SettingLine{{"protected-mode no", true}}},
			{Name: "proto-max-bulk-len", Lines: []SettingLine{{"proto-max-bulk-len 512mb", false}}},
			{Name: "log-level", Lines: []SettingLine{{"log-level warn", true}}},
		}
	}
	in := "# Sample config\nport 6392\nmaxclients 500\nmaxclients 600\n  Timeout   7  \n\"maxmemory\" '1mb'\nloglevel notice\nfoo bar\n"
	want := "# Sample config\nport 6392\nmaxclients 600\n\ntimeout 7\nmaxmemory 0\nlog-level warn\n# ??? foo bar\n\n" +
		Signature + "\nprotected-mode no\n"
	got := rewriteText(in, settings("600", true), canonicalTest)
	if got != want {
		t.Errorf("first rewrite:\n%s\nwant:\n%s", got, want)
	}
	// Again with a change: the signature is there, the file's trailing
	// blank line stays once, and nothing new is appended.
	again := rewriteText(got, settings("700", true), canonicalTest)
	if want2 := strings.Replace(want, "maxclients 600", "maxclients 700", 1) + "\n"; again != want2 {
		t.Errorf("second rewrite:\n%q\nwant:\n%q", again, want2)
	}
	// A setting new to a file with a signature goes at the very end.
	third := rewriteText(again, append(settings("700", true), Setting{Name: "requirepass", Lines: []SettingLine{{"requirepass " + Quote(`a b"c`), true}}}), canonicalTest)
	if !strings.HasSuffix(third, "protected-mode no\n\nrequirepass \"a b\\\"c\"\n") {
		t.Errorf("third rewrite:\n%s", third)
	}
	if got := rewriteText("", settings("10000", false), canonicalTest); got != Signature+"\ntimeout 7\nprotected-mode no\nlog-level warn\n" {
		t.Errorf("empty file:\n%q", got)
	}
}

// Rewrite replaces the file atomically, keeping its mode, and leaves no
// temporary file behind.
func TestRewriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "redcell.conf")
	write(t, path, "# keep me\ntimeout 1\n")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Rewrite(path, []Setting{{Name: "timeout", Lines: []SettingLine{{"timeout 2", true}}}}, canonicalTest); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "# keep me\ntimeout 2\n\n" {
		t.Errorf("got %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// No input makes the parser or the rewrite panic; what Quote writes is read
// back unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"port 6380\n", `x "\x4g\"" 'a\'b'`, "a\"b\" c", "# c\n\n\"", "include x\nfoo 'bar"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, _ = Parse("f", text)
		_ = rewriteText(text, []Setting{{Name: "port", Lines: []SettingLine{{"port 1", true}}}}, canonicalTest)
		args, ok := SplitArgs("x " + Quote(text))
		if !ok || len(args) != 2 || args[1] != text {
			t.Errorf("Quote(%q) reads back as %q, %v", text, args, ok)
		}
	})
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
