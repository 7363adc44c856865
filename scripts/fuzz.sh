#!/usr/bin/env bash
# Runs every fuzz target of the module (every `func Fuzz...` in a test
# file) for FUZZTIME each, one at a time: `go test -fuzz` takes one target
# per run. A new fuzz target is picked up without editing anything.
#
# Environment: GO (default go), FUZZTIME (default 10s), FUZZFLAGS (extra
# flags, e.g. -parallel=1 on a shared machine).
set -euo pipefail

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
FUZZFLAGS=${FUZZFLAGS:-}

cd "$(dirname "$0")/.."
grep -rl --include='*_test.go' --exclude-dir=testdata '^func Fuzz' . | sort | while read -r file; do
	dir=$(dirname "$file")
	for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -c6-); do
		echo "== $dir $target"
		# shellcheck disable=SC2086 # FUZZFLAGS is a list of flags
		"$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" $FUZZFLAGS "$dir"
	done
done
