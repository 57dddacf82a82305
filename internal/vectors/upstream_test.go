package vectors

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMatchesUpstreamCopy checks that testdata/ still equals the vectors
// this repository was given, when REDCELL_UPSTREAM_VECTORS names the
// directory they came from (.ci/run sets it when that directory is present
// on the machine). It is optional by design: in a clone standing alone the
// variable is unset and the test skips, since the embedded copy is then the
// only one there is. The go command does not track files outside the module
// for its test cache, so after the upstream files change, rerun with
// -count=1.
func TestMatchesUpstreamCopy(t *testing.T) {
	upstream := os.Getenv("REDCELL_UPSTREAM_VECTORS")
	if upstream == "" {
		t.Skip("REDCELL_UPSTREAM_VECTORS is not set: nothing to compare with (optional check)")
	}
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

// baseNames returns the sorted file names of paths.
func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	slices.Sort(out)
	return out
}
