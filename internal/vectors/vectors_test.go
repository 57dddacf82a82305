package vectors

import "testing"

// TestEmbeddedVectorsLoad checks that each embedded file parses and holds the
// whole set. The counts are pinned because a truncated copy would still
// parse, and every suite replaying the vectors would then check less without
// failing; change them together with the files.
func TestEmbeddedVectorsLoad(t *testing.T) {
	for _, tc := range []struct {
		file      string
		scenarios int
	}{
		{"cl_throttle.jsonl", 46},
		{"tb_sl.jsonl", 45},
	} {
		t.Run(tc.file, func(t *testing.T) {
			scenarios, err := Load(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(scenarios) != tc.scenarios {
				t.Errorf("%d scenarios, want %d", len(scenarios), tc.scenarios)
			}
			// Suites name subtests after scenarios; a duplicate would hide one.
			seen := make(map[string]bool)
			for _, s := range scenarios {
				if s.Name == "" || seen[s.Name] {
					t.Errorf("scenario name %q is empty or repeated", s.Name)
				}
				seen[s.Name] = true
				for i, st := range s.Steps {
					if len(st.Args) == 0 {
						t.Errorf("%s step %d has no command", s.Name, i)
					}
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load("no_such_file.jsonl"); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}
