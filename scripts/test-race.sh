#!/usr/bin/env bash
# Runs every package's tests with the race detector, the way `make test`
# does: each package's test binary is built with `go test -race -c`, and
# run in its package's directory as `go test` runs it.
#
# Four things go on at once, so that building (most of a clean run's
# time, and all CPU) and the tests that need only CPU fill the time the
# cluster tests spend waiting (about two thirds of the machine):
#
#   - the main lane runs the cluster packages one at a time, each as
#     soon as its binary is built, at normal priority. Their tests start
#     clusters of node processes (or of nodes in one process) with
#     failure timeouts of seconds; two such packages at once on a
#     2-core machine starve each other's gossip, and a live node is then
#     declared dead (a flake, not a finding), so they never overlap, and
#     everything else runs below them;
#   - the builder builds the binaries one package at a time (one `go`
#     command at a time: several side by side compiled the shared
#     dependencies once each), the main lane's and the side lane's in
#     turn, then the quiet lane's, at nice 10 and without DWARF (-w: a
#     fifth less link time; stack traces and race reports need only the
#     symbol table), and with -trimpath: a package's compiled form is then
#     the same whatever directory the checkout is in, so a fresh clone in
#     a new directory reuses the build cache instead of compiling every
#     package of the module again under -race (about 400 s of a run);
#   - the side lane runs, one at a time, the packages whose tests start
#     no cluster (at most one embedded node and its worker processes)
#     and wait on no deadline a slower CPU would miss;
#   - the quiet lane runs the packages whose tests run on virtual time
#     or none (the simulator, the pure state machines and their
#     scripts): nothing in them waits on a clock.
#
# The side lane is two lanes side by side, each taking every other
# package, and a package whose tests take most of the side lane's time
# (`split`: the data package, about 600 s of the lane's 770 under CI)
# has its tests shared between them: each lane takes the next four
# tests not yet taken and runs them in a process of their own (halves
# fixed in advance came out 115 s and 214 s, as a few tests take most of
# the time; one process a test cost ~0.2 s of CPU a process under the
# race detector, about 25 s of the data package's ~380). A side
# package's test process uses about one core (it waits on worker
# processes and files between its bursts), so one side lane left the
# second core idle once the builder was done, and the data package
# alone set the run's length.
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

# The quiet lane's packages (see above). A package goes here only if
# none of its tests starts a process or a cluster, or waits on a
# deadline shorter than the whole test's.
quiet='^github\.com/atoll-runtime/atoll/(sim|amm|faultplan|data/expr|internal/(codec|errs|ids|interaction|owner|placement|raylet|registry|sortcheck|partition|gen/funcs|clusterkey|nodeconfig|lint|apicheck|benchfmt|autoscaler/kubernetes|outbox))$'
# The side lane's (see above): every other package that starts no
# cluster. A package whose tests time a failure detector, start node
# processes or time out a process's start stays in the main lane.
side='^github\.com/atoll-runtime/atoll/(data|graph|graph/array|graph/internal/graphbench|util|node|samples/(dataset|sort|arrays|broadcast|flood|quickstart|shmfloor)|internal/(objectstore|objectstore/spill|shmfloor|microbench|workerproto|workerconn|actors|jobs|natsembed|runtime|doccheck|pss|lockfile|clusterclient|telemetry|testutil|preauth|nodemetrics))$'

# The packages whose tests the two side lanes share (see above), and how
# many of their tests a process runs.
split='^github\.com/atoll-runtime/atoll/data$'
per_process=4

bindir=$(mktemp -d "${TMPDIR:-/tmp}/atoll-test-bin.XXXXXX")
builder= quiet_pid= side_pid= side2_pid=
cleanup() {
	for pid in $builder $quiet_pid $side_pid $side2_pid; do
		kill "$pid" 2>/dev/null
	done
	rm -rf "$bindir"
}
trap cleanup EXIT

# The packages that have tests, with their directories.
mapfile -t pkgs < <("$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "$@")
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "no packages with tests in $*" >&2
	exit 1
fi
main_lane=() side_lane=() quiet_lane=()
for line in "${pkgs[@]}"; do
	if [[ ${line%% *} =~ $quiet ]]; then
		quiet_lane+=("$line")
	elif [[ ${line%% *} =~ $side ]]; then
		side_lane+=("$line")
	else
		main_lane+=("$line")
	fi
done
# The package that builds programs of its own (the README's module) runs
# last in the side lane, when the builder is done and leaves it the CPU.
for i in "${!side_lane[@]}"; do
	if [[ ${side_lane[i]%% *} == */internal/doccheck ]]; then
		side_lane+=("${side_lane[i]}")
		unset 'side_lane[i]'
	fi
done
side_lane=("${side_lane[@]}")
# The two side lanes: a split package first in both (its tests are the
# longest), then every other package each.
side1=() side2=()
for line in "${side_lane[@]}"; do
	if [[ ${line%% *} =~ $split ]]; then
		side1+=("${line%% *} shared ${line#* }")
		side2+=("${line%% *} shared ${line#* }")
	fi
done
n=0
for line in "${side_lane[@]}"; do
	[[ ${line%% *} =~ $split ]] && continue
	if ((n++ % 2 == 0)); then
		side1+=("${line%% *} - ${line#* }")
	else
		side2+=("${line%% *} - ${line#* }")
	fi
done
main_entries=() quiet_entries=()
for line in "${main_lane[@]}"; do main_entries+=("${line%% *} - ${line#* }"); done
for line in "${quiet_lane[@]}"; do quiet_entries+=("${line%% *} - ${line#* }"); done
# The builder's order: the main lane's and the side lane's in turn.
build_order=()
for ((i = 0; i < ${#main_lane[@]} || i < ${#side_lane[@]}; i++)); do
	[ $i -lt ${#main_lane[@]} ] && build_order+=("${main_lane[i]}")
	[ $i -lt ${#side_lane[@]} ] && build_order+=("${side_lane[i]}")
done
build_order+=("${quiet_lane[@]}")

binary() { echo "$bindir/$(echo "$1" | tr '/.' '__').test"; }

# The builder: each binary is linked under a temporary name and renamed,
# then a .built marker says it is done (the binary is missing if the
# build failed: its output is in the .log).
echo "building ${#pkgs[@]} test binaries (${#main_lane[@]} in the main lane, ${#side_lane[@]} in the side lane, ${#quiet_lane[@]} in the quiet lane), running them as they come"
start_all=$SECONDS
(
	for line in "${build_order[@]}"; do
		pkg=${line%% *}
		bin=$(binary "$pkg")
		start=$SECONDS
		if nice -n 10 "$GO" test -race -c -trimpath -ldflags=-w -o "$bin.tmp" "$pkg" >"$bin.log" 2>&1 && [ -e "$bin.tmp" ]; then
			mv "$bin.tmp" "$bin"
		fi
		echo "$((SECONDS - start)) $pkg" >>"$bindir/build-times"
		touch "$bin.built"
	done
	{
		echo "built every test binary after $((SECONDS - start_all)) s; the longest builds (s):"
		sort -rn "$bindir/build-times" | head -5 | sed 's/^/  /'
	} >"$bindir/built"
) &
builder=$!

# lane runs its packages in order, each once built, printing as `go
# test` over several packages does: a passing package's output is left
# out, a failing one's shown. It exits 1 if any failed.
# An entry is "package how directory", how "-" for the whole package in
# one process, or "shared" for a package whose tests both side lanes
# take per_process at a time, each batch in a process of its own: a lane
# claims a test by creating its claim directory (mkdir is atomic), so
# each test runs once whichever lane gets to it first. When TESTFLAGS picks the
# tests (-test.run) a shared package runs whole, in the first lane to
# reach it.
lane() {
	local failed=0 line pkg how dir bin start rc ms took i n name
	local -a tests batch
	for line in "$@"; do
		pkg=${line%% *}
		line=${line#* }
		how=${line%% *}
		dir=${line#* }
		bin=$(binary "$pkg")
		while [ ! -e "$bin.built" ]; do
			sleep 0.2
		done
		if [ ! -x "$bin" ]; then
			mkdir "$bin.claim" 2>/dev/null || continue
			cat "$bin.log"
			printf 'FAIL\t%s [build failed]\n' "$pkg"
			failed=1
			continue
		fi
		if [ "$how" = - ] || [[ $TESTFLAGS == *-test.run* ]]; then
			[ "$how" = - ] || mkdir "$bin.claim" 2>/dev/null || continue
			run_tests "$pkg" "$dir" "$bin" "$bin.out" || failed=1
			# a shared package's binary stays for the other lane
			[ "$how" = - ] && rm -f "$bin"
			continue
		fi
		mapfile -t tests < <(cd "$dir" && "$bin" -test.list . | grep -v '^Benchmark')
		start=${EPOCHREALTIME/./}
		n=0 rc=0 batch=()
		for i in "${!tests[@]}" end; do
			if [ "$i" != end ]; then
				mkdir "$bin.claim.$i" 2>/dev/null || continue
				batch+=("${tests[i]}")
				[ ${#batch[@]} -lt "$per_process" ] && continue
			fi
			[ ${#batch[@]} -eq 0 ] && continue
			n=$((n + ${#batch[@]}))
			name="$pkg ${batch[*]}"
			run_tests "$name" "$dir" "$bin" "$bin.out.$i" "-test.run=^($(IFS='|'; echo "${batch[*]}"))\$" >"$bin.res.$i" || {
				cat "$bin.res.$i"
				rc=1
			}
			rm -f "$bin.res.$i"
			batch=()
		done
		ms=$(((${EPOCHREALTIME/./} - start) / 1000))
		name="$pkg ($n of its ${#tests[@]} tests, in this lane)"
		if [ $rc -eq 0 ]; then
			printf 'ok  \t%s\t%d.%03ds\n' "$name" $((ms / 1000)) $((ms % 1000))
		else
			printf 'FAIL\t%s\t%d.%03ds\n' "$name" $((ms / 1000)) $((ms % 1000))
			failed=1
		fi
	done
	return $failed
}

# run_tests runs a test binary in its package's directory, with flags
# after the common ones, printing as `go test` does: a passing run's
# output is left out, a failing one's shown. It fails if the run did.
run_tests() {
	local name=$1 dir=$2 bin=$3 out=$4 start rc ms took
	shift 4
	start=${EPOCHREALTIME/./}
	# shellcheck disable=SC2086 # TESTFLAGS is a list of flags
	(cd "$dir" && "$bin" -test.count=1 -test.timeout=30m -test.paniconexit0 "$@" $TESTFLAGS) >"$out" 2>&1
	rc=$?
	ms=$(((${EPOCHREALTIME/./} - start) / 1000))
	took=$(printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)))
	if [ $rc -eq 0 ]; then
		printf 'ok  \t%s\t%s\n' "$name" "$took"
	else
		cat "$out"
		printf 'FAIL\t%s\t%s\n' "$name" "$took"
	fi
	rm -f "$out"
	return $rc
}

# The side and quiet lanes print when the main lane is done, so the
# lanes do not interleave.
export bindir TESTFLAGS per_process
export -f lane run_tests binary
idle=(nice -n 19)
if chrt --idle 0 true 2>/dev/null; then
	idle=(chrt --idle 0)
fi
"${idle[@]}" bash -c 'lane "$@"' _ "${side1[@]}" >"$bindir/side.out" 2>&1 &
side_pid=$!
"${idle[@]}" bash -c 'lane "$@"' _ "${side2[@]}" >"$bindir/side2.out" 2>&1 &
side2_pid=$!
"${idle[@]}" bash -c 'lane "$@"' _ "${quiet_entries[@]}" >"$bindir/quiet.out" 2>&1 &
quiet_pid=$!
failed=0
lane "${main_entries[@]}" || failed=1
wait "$side_pid" || failed=1
side_pid=
cat "$bindir/side.out"
wait "$side2_pid" || failed=1
side2_pid=
cat "$bindir/side2.out"
wait "$quiet_pid" || failed=1
quiet_pid=
cat "$bindir/quiet.out"
wait "$builder"
builder=
cat "$bindir/built" 2>/dev/null
echo "all done after $((SECONDS - start_all)) s"
exit $failed
