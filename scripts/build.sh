#!/usr/bin/env bash
# Build the release binary: static (CGO_ENABLED=0, so it runs on a scratch
# image and on any Linux of its architecture), with its version stamped in
# (main.version; `redcell --version`, INFO's redcell_version and the start-up
# log say it).
#
#   scripts/build.sh            writes build/redcell, and build/data/ (the
#                               empty directory the Containerfile copies as
#                               the image's /data)
#   OUT=path scripts/build.sh   writes the binary to path instead
#   VERSION=v1.2.3 scripts/build.sh
#                               stamps that version instead of the checkout's
#
# The version defaults to `git describe --tags --always --dirty`: the tag of
# a tagged commit (v0.8.0), else the nearest tag, the commits since and the
# commit (v0.8.0-3-gabc1234), with -dirty for uncommitted changes.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
OUT=${OUT:-build/redcell}
mkdir -p "$(dirname "$OUT")" build/data
# -trimpath: no build machine paths in the binary; -s -w: no symbol table
# or DWARF (a smaller image; panics still print function names and lines).
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$OUT" ./cmd/redcell
echo "$OUT: $("$OUT" --version)"
