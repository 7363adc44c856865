#!/usr/bin/env bash
# Runs every package's tests with the race detector, the way `make test`
# does: first every test binary is built, as many at once as there are
# cores (building is most of a clean run's time); then the binaries run
# one package at a time, each in its package's directory as `go test`
# runs it. Many packages start clusters of node processes with failure
# timeouts of seconds; two such packages at once on a 2-core machine
# starve each other's gossip, and a live node is then declared dead (a
# flake, not a finding). Building the binaries once, rather than letting
# `go test -p 1` link each again as its turn comes, saves the links'
# time from the serial part.
#
# Usage: scripts/test-race.sh [packages...]   (default ./...)
# Environment: GO (default go), GORACE (default atexit_sleep_ms=100),
# TESTFLAGS (extra flags for every binary,
# e.g. -test.v or -test.run=TestX).
set -uo pipefail

GO=${GO:-go}
TESTFLAGS=${TESTFLAGS:-}
# A binary built with -race sleeps a second before it exits, so that
# goroutines still reporting a race get to finish. Tests start hundreds
# of such processes (nodes, worker processes, job drivers) and wait for
# many of them to exit: at the default the sleeps were about half of a
# cluster test's time. A tenth of a second still lets a report finish;
# a race anywhere still fails its test (exit code 66, and testcluster
# reads every node's log for race reports).
export GORACE=${GORACE:-atexit_sleep_ms=100}
[ $# -eq 0 ] && set -- ./...

bindir=$(mktemp -d "${TMPDIR:-/tmp}/atoll-test-bin.XXXXXX")
trap 'rm -rf "$bindir"' EXIT

# The packages that have tests, with their directories.
mapfile -t pkgs < <("$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "$@")
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "no packages with tests in $*" >&2
	exit 1
fi

binary() { echo "$bindir/$(echo "$1" | tr '/.' '__').test"; }

echo "building ${#pkgs[@]} test binaries"
export GO bindir
built=$(printf '%s\n' "${pkgs[@]}" | cut -d' ' -f1 |
	xargs -P "$(nproc)" -I{} sh -c 'out="$bindir/$(echo "$1" | tr "/." "__").test"; "$GO" test -race -c -o "$out" "$1" || echo "BUILD-FAILED $1"' _ {})
failed=0
if printf '%s\n' "$built" | grep -q '^BUILD-FAILED'; then
	printf '%s\n' "$built" | grep '^BUILD-FAILED' | sed 's/^BUILD-FAILED/FAIL (build)/'
	failed=1
fi

for line in "${pkgs[@]}"; do
	pkg=${line%% *}
	dir=${line#* }
	bin=$(binary "$pkg")
	[ -x "$bin" ] || continue
	start=${EPOCHREALTIME/./}
	# shellcheck disable=SC2086 # TESTFLAGS is a list of flags
	(cd "$dir" && "$bin" -test.count=1 -test.timeout=30m -test.paniconexit0 $TESTFLAGS) >"$bindir/out" 2>&1
	rc=$?
	ms=$(((${EPOCHREALTIME/./} - start) / 1000))
	took=$(printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)))
	# As `go test` over several packages: a passing package's output is
	# left out, a failing one's shown.
	if [ $rc -eq 0 ]; then
		printf 'ok  \t%s\t%s\n' "$pkg" "$took"
	else
		cat "$bindir/out"
		printf 'FAIL\t%s\t%s\n' "$pkg" "$took"
		failed=1
	fi
done
exit $failed
