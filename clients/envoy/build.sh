#!/usr/bin/env bash
# Builds envoyproxy/ratelimit's service (the Envoy/Istio rate-limit service,
# its src/service_cmd) from the Go module proxy, unchanged, at the version
# pinned here, for systemtest's rate-limit library tests. It prints the
# binary's path on stdout.
#
#   bash clients/envoy/build.sh [directory]
#
# The binary is cached as <directory>/ratelimit-<version> (default: the
# user's cache directory, as Go's os.UserCacheDir names it, under
# redcell/envoy-ratelimit): a second call with the same version builds
# nothing. .ci/run calls this before `go test` and hands the path to the
# tests in REDCELL_ENVOY_RATELIMIT; without it the test calls this script
# itself. The proxy lists no tagged version of the module: the version is
# the pseudo-version its @latest answers (a commit of January 2026); its
# go.mod asks for Go 1.25.6, which the machine's Go satisfies.
set -euo pipefail

version=v1.4.1-0.20260122083618-3fb702589d36
dir=${1:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/redcell/envoy-ratelimit}
bin="$dir/ratelimit-$version"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir"
work=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Outside any module, so that the repository's go.mod plays no part; the
# module's own go.sum is checked against the checksum database as usual.
(cd "$work" && GOBIN="$work/bin" GOFLAGS=-mod=mod go install "github.com/envoyproxy/ratelimit/src/service_cmd@$version") >&2
mv "$work/bin/service_cmd" "$bin"
echo "$bin"
