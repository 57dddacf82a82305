package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release this binary is, set when it is built for one:
//
//	go build -ldflags "-X main.version=v0.9.0" ./cmd/redcell
//
// A build without it reports the commit it was built from, which Go stamps
// into a binary built in a git checkout (buildVersion).
var version = ""

// buildVersion is version, or "dev-<commit>" ("-dirty" when the checkout
// had changes), or "dev" when neither is known: what --version, INFO's
// redcell_version and the start-up log line say.
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return devVersion(info.Settings)
}

// devVersion names an unreleased build from its VCS stamp.
func devVersion(settings []debug.BuildSetting) string {
	rev, dirty := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev-" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

// versionLine is what --version prints.
func versionLine() string {
	return fmt.Sprintf("redcell %s (%s, %s/%s)", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
