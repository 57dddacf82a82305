package request

import "testing"

// TestEveryCodeHasALevel: every code has a feature level between the base
// and this build's; in a build without new codes (no redcell_nextlevel tag)
// that is the base level for every code that exists, SetFeatureLevel
// included, so such a build refuses nothing it accepted before.
func TestEveryCodeHasALevel(t *testing.T) {
	for c := Code(0); c < 255; c++ {
		switch {
		case !c.Known():
			if c.Level() != 0 {
				t.Errorf("unknown code %d has level %d", c, c.Level())
			}
		case c.Level() < BaseFeatureLevel || c.Level() > SupportedFeatureLevel:
			t.Errorf("code %d (%s) has level %d, outside %d..%d", c, Describe(c).Name, c.Level(), BaseFeatureLevel, SupportedFeatureLevel)
		case SupportedFeatureLevel == BaseFeatureLevel && c.AboveLevel(BaseFeatureLevel):
			t.Errorf("code %d (%s) is above the base level in a build without new codes", c, Describe(c).Name)
		}
	}
	if op := Describe(SetFeatureLevel); SetFeatureLevel != 53 || op.Keys != NoKey || !SetFeatureLevel.IsWrite() || op.Level != BaseFeatureLevel {
		t.Errorf("SetFeatureLevel is %d %+v: the log format needs write code 53, no key, the base level", SetFeatureLevel, op)
	}
}

// TestFeatureLevelResultTravels: a refusal carries the code and both
// levels through the forwarding encoding, so a follower's reply names
// them; other errors still carry no integers.
func TestFeatureLevelResultTravels(t *testing.T) {
	var r Result
	r.SetFeatureLevelErr(Set, BaseFeatureLevel)
	r.Ints[1] = 2 // as a code of level 2 would have it
	b := AppendResult(nil, &r)
	var got Result
	rest, err := DecodeResult(b, &got)
	if err != nil || len(rest) != 0 || !got.Equal(r) {
		t.Fatalf("round trip: %+v %v, want %+v", got, err, r)
	}
	const want = "ERR 'SET' needs cluster feature level 2 (every member must run a build that supports it); the cluster is at level 1"
	if s := FeatureLevelText(&got); s != want {
		t.Errorf("text %q, want %q", s, want)
	}
	if s := FeatureLevelText(&Result{Kind: KindError, Err: ErrFeatureLevel}); s != ErrFeatureLevel.Text() {
		t.Errorf("text of a result without its integers: %q", s)
	}
	var other Result
	other.SetErr(ErrWrongType)
	other.Ints[0] = 7
	if b := AppendResult(nil, &other); len(b) != 2 {
		t.Errorf("WRONGTYPE encodes as %d bytes, want 2", len(b))
	}
}
