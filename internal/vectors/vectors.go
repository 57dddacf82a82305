// Package vectors loads the contract's test vectors (../shared/vectors) for
// the tests of every package: one definition of the file format, one rule for
// finding the files, and no test that silently passes when they are missing.
package vectors

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

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

// Dir is $REDCELL_VECTORS_DIR, or the shared contract's vector directory seen
// from a package directory of this repository (where go test runs).
func Dir() string {
	if d := os.Getenv("REDCELL_VECTORS_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "vectors")
}

// Load reads a JSONL vector file from Dir. Every step's reply must decode.
func Load(name string) ([]Scenario, error) {
	path := filepath.Join(Dir(), name)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vectors: %w (set REDCELL_VECTORS_DIR to override)", err)
	}
	defer f.Close()
	var out []Scenario
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s Scenario
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if len(s.Steps) == 0 {
			return nil, fmt.Errorf("%s:%d: scenario %q has no steps", path, line, s.Name)
		}
		for i, st := range s.Steps {
			if _, err := st.Expected(); err != nil {
				return nil, fmt.Errorf("%s:%d: scenario %q step %d: %w", path, line, s.Name, i, err)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no scenarios")
	}
	return out, nil
}
