#!/usr/bin/env bash
# Runs every package's tests with the race detector, the way `make test`
# does: first every test binary is built, by one `go test -c` for all of
# them (each package compiled once, as many at once as there are cores:
# building is most of a clean run's time, and separate `go` commands side
# by side compiled the shared dependencies once each); then the binaries
# run one package at a time, each in its package's directory as `go test`
# runs it. Many packages start clusters of node processes with failure
# timeouts of seconds; two such packages at once on a 2-core machine
# starve each other's gossip, and a live node is then declared dead (a
# flake, not a finding).
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

# `go test -c -o DIR` names each binary after the last element of its
# import path and refuses two of the same name, so the packages go in as
# few groups as keep those names apart (a directory each), built one
# group after the other (the later ones find most of their packages
# built).
declare -A group_of # import path -> its group's directory
declare -A taken    # "group.name" -> set once a group holds that name
declare -a groups   # per group, its import paths (space-separated)
for line in "${pkgs[@]}"; do
	pkg=${line%% *}
	name=${pkg##*/}
	g=0
	while [ -n "${taken[$g.$name]:-}" ]; do
		g=$((g + 1))
	done
	taken[$g.$name]=1
	groups[g]="${groups[g]:-} $pkg"
	group_of[$pkg]="$bindir/g$g"
done
binary() { echo "${group_of[$1]}/${1##*/}.test"; }

echo "building ${#pkgs[@]} test binaries"
failed=0
for g in "${!groups[@]}"; do
	mkdir -p "$bindir/g$g"
	# shellcheck disable=SC2086 # the group is a list of import paths
	if ! "$GO" test -race -c -o "$bindir/g$g/" ${groups[g]}; then
		failed=1 # the packages without a binary are listed below
	fi
done

for line in "${pkgs[@]}"; do
	pkg=${line%% *}
	dir=${line#* }
	bin=$(binary "$pkg")
	if [ ! -x "$bin" ]; then
		printf 'FAIL\t%s [build failed]\n' "$pkg"
		failed=1
		continue
	fi
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
