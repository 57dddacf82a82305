package conffile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Directive is one line of a config file that names a setting.
type Directive struct {
	File string   // the file it was read from (an include's own path)
	Line int      // 1-based line number in File
	Text string   // the line, trimmed, as the error report quotes it
	Name string   // the first word, lower-cased (names are case-insensitive)
	Args []string // the words after it
}

// LineError is a fault in one line of a config file. Its text is Redis's
// report for a bad config file, so an operator who knows Redis's knows it:
//
//	*** FATAL CONFIG FILE ERROR (Redcell v1.0.0) ***
//	Reading the configuration file, at line 3
//	>>> 'foo bar'
//	Bad directive or wrong number of arguments
//
// A line of an included file names that file after the number (Redis
// counts lines in the concatenation of every file, which points nowhere).
type LineError struct {
	Version string // what the heading names: "Redcell <version>"
	File    string
	Line    int
	Text    string
	Reason  string
	// Included is set when File is not the file given to Read.
	Included bool
}

func (e *LineError) Error() string {
	where := fmt.Sprintf("at line %d", e.Line)
	if e.Included {
		where += " of " + e.File
	}
	return fmt.Sprintf("\n*** FATAL CONFIG FILE ERROR (Redcell %s) ***\nReading the configuration file, %s\n>>> '%s'\n%s",
		e.Version, where, e.Text, e.Reason)
}

// Reasons a line is refused, in Redis's words.
const (
	ReasonUnbalancedQuotes = "Unbalanced quotes in configuration line"
	ReasonBadDirective     = "Bad directive or wrong number of arguments"
	ReasonWrongArgs        = "wrong number of arguments"
)

// maxIncludeDepth bounds include chains, so a file that includes itself
// is an error rather than a stack overflow.
const maxIncludeDepth = 16

// Read returns the directives of the file at path in order, with the
// files its "include <path|glob>" lines name read in their place (Redis's
// include; a relative path is relative to the working directory, as in
// Redis). Errors in a line are *LineError with Version unset; a file that
// cannot be read is an ordinary error naming it.
func Read(path string) ([]Directive, error) {
	return read(path, 0)
}

func read(path string, depth int) ([]Directive, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // "no such file or directory", as Redis's strerror
		}
		return nil, fmt.Errorf("can't open config file '%s': %w", path, err)
	}
	ds, err := Parse(path, string(data))
	if err != nil {
		return nil, err
	}
	var out []Directive
	for _, d := range ds {
		if d.Name != "include" {
			out = append(out, d)
			continue
		}
		if len(d.Args) != 1 {
			return nil, &LineError{File: d.File, Line: d.Line, Text: d.Text, Reason: ReasonWrongArgs}
		}
		if depth+1 >= maxIncludeDepth {
			return nil, &LineError{File: d.File, Line: d.Line, Text: d.Text, Reason: "include nested too deeply"}
		}
		files := []string{d.Args[0]}
		if strings.ContainsAny(d.Args[0], "*?[") {
			if files, err = filepath.Glob(d.Args[0]); err != nil {
				return nil, &LineError{File: d.File, Line: d.Line, Text: d.Text, Reason: err.Error()}
			}
		}
		for _, f := range files {
			inc, err := read(f, depth+1)
			var le *LineError
			if errors.As(err, &le) {
				le.Included = true
			}
			if err != nil {
				return nil, err
			}
			out = append(out, inc...)
		}
	}
	return out, nil
}

// Parse splits text (the contents of file) into its directives, without
// following includes. It never panics, whatever text holds.
func Parse(file, text string) ([]Directive, error) {
	var out []Directive
	for i, raw := range strings.Split(text, "\n") {
		line := strings.Trim(raw, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		args, ok := SplitArgs(line)
		if !ok {
			return nil, &LineError{File: file, Line: i + 1, Text: line, Reason: ReasonUnbalancedQuotes}
		}
		if len(args) == 0 {
			continue
		}
		out = append(out, Directive{File: file, Line: i + 1, Text: line, Name: asciiLower(args[0]), Args: args[1:]})
	}
	return out, nil
}

// asciiLower lower-cases ASCII letters only, byte by byte, as Redis's
// sdstolower does (strings.ToLower would rewrite invalid UTF-8).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
