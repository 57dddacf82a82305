package vectors

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMatchesUpstreamCopy checks that testdata/ still equals the vectors this
// repository was given, in ../shared/vectors next to the repository root,
// when that directory exists (on the development machine). It is the one
// place any test looks outside the repository, and it is optional by design:
// in a clone standing alone the directory is absent and the test skips, since
// the embedded copy is then the only one there is. The go command does not
// track files outside the module for its test cache, so after the upstream
// files change, rerun with -count=1.
func TestMatchesUpstreamCopy(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	upstream := filepath.Join(filepath.Dir(root), "shared", "vectors")
	theirs, err := filepath.Glob(filepath.Join(upstream, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs) == 0 {
		t.Skipf("no vectors in %s: nothing to compare with (optional check)", upstream)
	}
	ours, err := fs.Glob(files, "testdata/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := baseNames(ours), baseNames(theirs); !slices.Equal(got, want) {
		t.Fatalf("testdata has %v, %s has %v", got, upstream, want)
	}
	for _, name := range baseNames(theirs) {
		want, err := os.ReadFile(filepath.Join(upstream, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := files.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s differs from %s: copy it again", name, filepath.Join(upstream, name))
		}
	}
}

// moduleRoot walks up from the working directory (go test runs in the
// package's directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	slices.Sort(out)
	return out
}
