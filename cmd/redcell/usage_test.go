package main

import (
	"bytes"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"
)

// TestFlagGroupsCoverEveryFlag: --help lists every flag once, essentials
// first, in the --name style, and cites no source file.
func TestFlagGroupsCoverEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseFlags([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	help := out.String()

	var names []string
	grouped := map[string]int{}
	for _, g := range flagGroups {
		for _, n := range g.names {
			grouped[n]++
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		names = append(names, m[1])
	}
	var all []string
	defineFlags(&config{}, &bytes.Buffer{}).VisitAll(func(f *flag.Flag) { all = append(all, f.Name) })
	if len(names) != len(all) {
		t.Errorf("--help lists %d flags, %d are defined", len(names), len(all))
	}
	for _, n := range all {
		if grouped[n] != 1 {
			t.Errorf("flag --%s is in %d groups of --help", n, grouped[n])
		}
	}
	if !strings.HasPrefix(strings.SplitN(help, "\n\n", 4)[2], "Essentials:\n  --port") {
		t.Errorf("--help does not start with the essentials:\n%s", help)
	}
	if regexp.MustCompile(`DESIGN\.md|\.go\b`).MatchString(help) {
		t.Errorf("--help cites a source file:\n%s", help)
	}
}
