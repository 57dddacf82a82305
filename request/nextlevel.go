//go:build redcell_nextlevel

package request

// A build tagged redcell_nextlevel is "the next release" of the
// rolling-upgrade tests (systemtest/upgrade_test.go): one feature level
// above the base, with one code that only it knows, DebugNextLevel, which
// DEBUG NEXTLEVEL proposes (behind --enable-debug-command). No release
// build has this file.

// SupportedFeatureLevel is one above the base in the test build.
const SupportedFeatureLevel FeatureLevel = BaseFeatureLevel + 1

// DebugNextLevel is DEBUG NEXTLEVEL key value: SET key value, logged as a
// code that builds without the tag do not know (KeyValue: Key, then the
// value in Keys). Code 63 is reserved for it (codes.go).
const DebugNextLevel Code = 63

func init() {
	describeKeyspace([]Op{
		{Code: DebugNextLevel, Name: "DEBUG NEXTLEVEL", Keys: KeyValue, Reply: KindOK, Level: BaseFeatureLevel + 1},
	}, nil)
}
