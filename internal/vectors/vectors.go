// Package vectors holds the contract's test vectors (testdata/, described in
// testdata/README.md) for the tests of every package: one definition of the
// file format, and files compiled into the test binaries so that no test
// depends on its working directory or on anything outside the repository.
package vectors

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// files are the vector files. Embedding them (rather than opening a path
// relative to the package under test) lets gcra, bench and systemtest share
// one copy, and a missing file is a build error instead of a skipped test.
// Only test binaries import this package, so the server binary carries none.
//
//go:embed testdata/*.jsonl
var files embed.FS

// Scenario is one line of a vector file: steps replayed from an empty keyspace.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Steps       []Step `json:"steps"`
}

// Step is one command at an injected instant and the reply it must get.
type Step struct {
	TimeNs          int64              `json:"t_ns"`
	Args            []string           `json:"args"`
	Reply           json.RawMessage    `json:"reply"`
	StateAfter      map[string]*Stored `json:"state_after"`
	TimingSensitive bool               `json:"timing_sensitive"`
}

// Stored is how redis-cell left a key: its TAT (decimal ns) and its absolute
// expiry in Unix ms (nil: no expiry). A nil *Stored means the key is absent.
type Stored struct {
	Value      string `json:"value"`
	ExpireAtMs *int64 `json:"expire_at_ms"`
}

// Expected is a decoded reply: exactly one of Ints (an integer array), Int,
// Str (a status reply such as TYPE's) or Err (error text without '-') is set.
type Expected struct {
	Ints []int64
	Int  *int64
	Str  *string
	Err  *string
}

// Expected decodes the step's reply.
func (s Step) Expected() (Expected, error) {
	var e Expected
	var ints []int64
	if err := json.Unmarshal(s.Reply, &ints); err == nil {
		e.Ints = ints
		return e, nil
	}
	var n int64
	if err := json.Unmarshal(s.Reply, &n); err == nil {
		e.Int = &n
		return e, nil
	}
	var str string
	if err := json.Unmarshal(s.Reply, &str); err == nil {
		e.Str = &str
		return e, nil
	}
	var obj struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(s.Reply, &obj); err == nil && obj.Error != nil {
		e.Err = obj.Error
		return e, nil
	}
	return e, fmt.Errorf("reply %s is not an integer array, integer, string or {\"error\": ...}", s.Reply)
}

// Load parses an embedded vector file (e.g. "cl_throttle.jsonl"). Every
// step's reply must decode.
func Load(name string) ([]Scenario, error) {
	file := path.Join("testdata", name)
	data, err := files.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	var out []Scenario
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s Scenario
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if len(s.Steps) == 0 {
			return nil, fmt.Errorf("%s:%d: scenario %q has no steps", file, line, s.Name)
		}
		for i, st := range s.Steps {
			if _, err := st.Expected(); err != nil {
				return nil, fmt.Errorf("%s:%d: scenario %q step %d: %w", file, line, s.Name, i, err)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(out) == 0 {
		return nil, errors.New(file + ": no scenarios")
	}
	return out, nil
}
