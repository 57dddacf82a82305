//go:build !redcell_nextlevel

package request

// SupportedFeatureLevel is the highest cluster feature level this build can
// apply: the level of its newest code. A build tagged redcell_nextlevel
// (nextlevel.go) is one level above, for the rolling-upgrade tests.
const SupportedFeatureLevel FeatureLevel = BaseFeatureLevel
