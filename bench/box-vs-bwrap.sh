#!/usr/bin/env bash
# box-vs-bwrap.sh: run the same loop through Debian's bubblewrap and through
# hermes's own box, print medians (ms) and ratios (hermes / bwrap), plus the
# snapshot/restore figures from `go test -bench`.
#
# Targets (issue 3): box create + first command within 1.5x of a bare
# bubblewrap run; a command in a warm box <= 2 ms; a 50 MB snapshot <= 150 ms.
# Issue 14: `hermes box exec TASK -- true` on a box another hermes process
# runs (attach) <= 5 ms, shown against `true` alone, `hermes --version`
# (the process start it includes) and an in-box warm exec; create + first
# command <= 2.5x bwrap.
#
# Usage: bench/box-vs-bwrap.sh            (as root, from anywhere in the repo)
# Environment:
#   RUNS=30          timed runs per row (create rows)
#   WARM_RUNS=100    timed runs of the warm-command row
#   HERMES_BIN=path  use this binary instead of building ./cmd/hermes (its
#                    boxes use the hermes-box-init beside it, if any)
#   HERMES_BOX_BENCH_INIT=path  the init of the go benchmarks' boxes
#                    (default: the hermes-box-init beside hermes)
#   GO_BENCH=regex   extra `go test -bench` regex for ./internal/box (e.g. the
#                    runtime's in-process warm-exec benchmark); empty = none
#   SKIP_GO_BENCH=1  skip the go benchmark rows (the in-box warm exec the
#                    attach row is compared with is one of them)
#   TIMER=loop       use the bash loop even when hyperfine is installed
# Needs: bash, go, bubblewrap (apt-get install bubblewrap); hyperfine is used
# when installed (apt-get install hyperfine), else a date +%s%N loop.
set -euo pipefail

RUNS=${RUNS:-30}
WARM_RUNS=${WARM_RUNS:-100}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d /tmp/hermes-bench.XXXXXX)
export HERMES_HOME="$work/home" # never touch the user's real state
mkdir -p "$HERMES_HOME"

die() { echo "box-vs-bwrap: $*" >&2; exit 1; }

hermes=""
owner_pid=""
cleanup() {
	if [[ -n $owner_pid ]]; then
		kill "$owner_pid" 2>/dev/null || true
		wait "$owner_pid" 2>/dev/null || true
	fi
	if [[ -n $hermes && -x $hermes ]]; then
		"$hermes" box rm bench-create >/dev/null 2>&1 || true
		"$hermes" box rm bench-warm >/dev/null 2>&1 || true
		"$hermes" box rm bench-attach >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

command -v bwrap >/dev/null || die "bwrap not found; install it with: apt-get install bubblewrap"
command -v go >/dev/null || die "go not found in PATH"

if [[ -n ${HERMES_BIN:-} ]]; then
	hermes=$HERMES_BIN
else
	# hermes-box-init beside hermes, as every install puts it: without it
	# hermes re-executes itself as each box's init (the fallback), which
	# is not what users run.
	echo "building hermes and hermes-box-init..." >&2
	# Built as make install and install.sh build them (static, stripped).
	(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/" ./cmd/hermes ./cmd/hermes-box-init) || die "go build ./cmd/hermes ./cmd/hermes-box-init failed"
	hermes="$work/hermes"
fi
# The linked libraries' start-up floor (bench/dependency-floor.sh): the
# CLI create row is also reported above it, as the start-up rows are
# (issue 26's decision).
(cd "$repo" && bench/dependency-floor.sh "$work") || die "bench/dependency-floor.sh failed"
# The in-process go benchmarks use the same init (else the test binary
# would be each box's init).
init_beside=$(dirname "$hermes")/hermes-box-init
if [[ -z ${HERMES_BOX_BENCH_INIT:-} && -x $init_beside ]]; then
	export HERMES_BOX_BENCH_INIT=$init_beside
fi
echo "box init: ${HERMES_BOX_BENCH_INIT:-the test binary (no hermes-box-init beside $hermes)}" >&2

# The box CLI (`hermes box exec TASK -- CMD`, `hermes box rm TASK`) is
# written by the box runtime; refuse clearly until it exists.
if ! "$hermes" box exec --help >/dev/null 2>&1 || ! "$hermes" box rm --help >/dev/null 2>&1; then
	die "this hermes binary has no 'hermes box exec TASK -- CMD' / 'hermes box rm TASK' subcommands yet (internal/cli/box.go); wire them, then rerun"
fi

timer=loop
[[ ${TIMER:-} != loop ]] && command -v hyperfine >/dev/null && timer=hyperfine

BWRAP=(bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp)

# median_ms NAME PREPARE CMD...: median wall time of CMD in ms over RUNS
# runs (PREPARE, a shell string, runs untimed before each run).
median_ms() {
	local runs=$1 prepare=$2
	shift 2
	if [[ $timer == hyperfine ]]; then
		local json="$work/hf.json"
		local args=(--runs "$runs" --warmup 3 -N --export-json "$json" --style none)
		[[ -n $prepare ]] && args+=(--prepare "$prepare")
		hyperfine "${args[@]}" "$(printf '%q ' "$@")" >/dev/null 2>&1 || die "command failed: $*"
		grep -o '"median": *[0-9.e+-]*' "$json" | head -1 | awk -F': *' '{printf "%.2f", $2 * 1000}'
	else
		local times=() i t0 t1
		for ((i = 0; i < runs + 3; i++)); do
			[[ -n $prepare ]] && bash -c "$prepare" >/dev/null 2>&1
			t0=$(date +%s%N)
			"$@" >/dev/null 2>&1 || die "command failed: $*"
			t1=$(date +%s%N)
			((i >= 3)) && times+=($(((t1 - t0) / 1000)))
		done
		printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1000}'
	fi
}

# cpu_ms RUNS CMD...: user+system CPU ms per run of CMD (and of the
# children it waited for), over RUNS runs: the work done, whatever the
# load of the machine.
cpu_ms() {
	local runs=$1
	shift
	/usr/bin/time -f '%U %S' -o "$work/cpu" bash -c 'n=$1; shift; for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1; done' _ "$runs" "$@"
	awk -v r="$runs" '{printf "%.2f", ($1 + $2) * 1000 / r}' "$work/cpu"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

echo "timer: $([[ $timer == hyperfine ]] && hyperfine --version || echo 'bash date +%s%N loop'); runs: $RUNS (warm: $WARM_RUNS); $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"

plain=$(median_ms "$RUNS" "" true)
bwrap_ms=$(median_ms "$RUNS" "" "${BWRAP[@]}" true)
bwrap_echo=$(median_ms "$RUNS" "" "${BWRAP[@]}" echo hi)

# Create + first command: the prepare step removes the task, so every
# timed run starts a new box with an empty upper layer.
rm_create="$(printf '%q' "$hermes") box rm bench-create"
"$hermes" box exec --new bench-create -- true >/dev/null || die "hermes box exec bench-create -- true failed; run it by hand to see why"
create_ms=$(median_ms "$RUNS" "$rm_create" "$hermes" box exec --new bench-create -- true)
create_echo=$(median_ms "$RUNS" "$rm_create" "$hermes" box exec --new bench-create -- echo hi)
floor_ms=$(median_ms "$RUNS" "" "$work/floor")

# The same with terminal.container_persistent: false (a tmpfs layer; the
# box's state goes when the command ends): the issue-14 row.
np_home="$work/home-np"
mkdir -p "$np_home"
printf 'terminal:\n  container_persistent: false\n' >"$np_home/config.yaml"
HERMES_HOME="$np_home" "$hermes" box exec --new bench-np -- true >/dev/null || die "hermes box exec --new bench-np -- true (non-persistent) failed"
create_np_ms=$(HERMES_HOME="$np_home" median_ms "$RUNS" "" "$hermes" box exec --new bench-np -- true)

# Warm: the task's box already exists; each run is one more command.
"$hermes" box exec --new bench-warm -- true >/dev/null || die "hermes box exec bench-warm -- true failed"
warm_ms=$(median_ms "$WARM_RUNS" "" "$hermes" box exec bench-warm -- true)

# Attach: another hermes process runs the box (here a box exec that waits);
# each run attaches to it through its attach socket.
"$hermes" box exec --new bench-attach -- sleep 1000000 >/dev/null 2>&1 &
owner_pid=$!
for ((i = 0; i < 600; i++)); do
	[[ -S $HERMES_HOME/boxes/bench-attach/attach-v2.sock ]] && break
	sleep 0.05
done
[[ -S $HERMES_HOME/boxes/bench-attach/attach-v2.sock ]] || die "the box of bench-attach did not come up (no attach socket)"
attach_ms=$(median_ms "$WARM_RUNS" "" "$hermes" box exec bench-attach -- true)
version_ms=$(median_ms "$RUNS" "" "$hermes" --version)
plain_cpu=$(cpu_ms "$WARM_RUNS" true)
version_cpu=$(cpu_ms "$WARM_RUNS" "$hermes" --version)
attach_cpu=$(cpu_ms "$WARM_RUNS" "$hermes" box exec bench-attach -- true)
bwrap_cpu=$(cpu_ms "$RUNS" "${BWRAP[@]}" true)
create_cpu=$(cpu_ms "$RUNS" bash -c "$rm_create >/dev/null 2>&1; $(printf '%q ' "$hermes") box exec --new bench-create -- true")
kill "$owner_pid" 2>/dev/null || true
wait "$owner_pid" 2>/dev/null || true
owner_pid=""

# The in-box warm exec (in-process, no hermes start) the attach row is
# measured against: /bin/true exec'd by a running box's init, and the
# same through a fresh attach connection.
inbox_ms="" attach_inproc_ms=""
if [[ -z ${SKIP_GO_BENCH:-} ]]; then
	gb=$(cd "$repo" && go test -run '^$' -bench 'BoxWarmCommand/(exec-true|attach-exec-true)$' -benchtime "${WARM_RUNS}x" ./internal/box)
	inbox_ms=$(awk '/^BenchmarkBoxWarmCommand\/exec-true/ {printf "%.2f", $3 / 1e6}' <<<"$gb")
	attach_inproc_ms=$(awk '/^BenchmarkBoxWarmCommand\/attach-exec-true/ {printf "%.2f", $3 / 1e6}' <<<"$gb")
fi

printf '\n%-44s %10s %10s\n' "row" "median ms" "vs bwrap"
printf '%-44s %10s %10s\n' "plain /bin/true (process spawn floor)" "$plain" ""
printf '%-44s %10s %10s\n' "bwrap --unshare-all ... true" "$bwrap_ms" "1.00x"
printf '%-44s %10s %10s\n' "bwrap --unshare-all ... echo hi" "$bwrap_echo" "1.00x"
printf '%-44s %10s %10s\n' "hermes box exec NEW -- true (create+first)" "$create_ms" "$(ratio "$create_ms" "$bwrap_ms")"
printf '%-44s %10s %10s\n' "hermes box exec NEW -- echo hi" "$create_echo" "$(ratio "$create_echo" "$bwrap_echo")"
above=$(awk -v a="$create_ms" -v f="$floor_ms" 'BEGIN { printf "%.2f", a - f }')
printf '%-44s %10s %10s\n' "dependency floor (linked libraries' start)" "$floor_ms" "$(ratio "$floor_ms" "$bwrap_ms")"
printf '%-44s %10s %10s\n' "box exec NEW -- true above that floor" "$above" "$(ratio "$above" "$bwrap_ms")"
printf '%-44s %10s %10s\n' "box exec NEW -- true, non-persistent" "$create_np_ms" "$(ratio "$create_np_ms" "$bwrap_ms")"
printf '%-44s %10s %10s\n' "hermes box exec STOPPED -- true (starts it)" "$warm_ms" "$(ratio "$warm_ms" "$bwrap_ms")"
echo "targets: create+first <= 1.50x bwrap (issue 14: <= 2.5x; issue 26: <= 3.5x above the floor); warm command <= 2 ms (in-process; the CLI row adds hermes start-up)"

printf '\n%-44s %10s %10s %10s %10s\n' "attach row (issue 14)" "median ms" "vs true" "vs --version" "vs in-box"
printf '%-44s %10s %10s %10s %10s\n' "plain /bin/true" "$plain" "1.00x" "" ""
printf '%-44s %10s %10s %10s %10s\n' "hermes --version (hermes process start)" "$version_ms" "$(ratio "$version_ms" "$plain")" "1.00x" ""
if [[ -n $inbox_ms ]]; then
	printf '%-44s %10s %10s %10s %10s\n' "in-box warm exec of /bin/true (go bench)" "$inbox_ms" "$(ratio "$inbox_ms" "$plain")" "" "1.00x"
	printf '%-44s %10s %10s %10s %10s\n' "attach + exec true, in-process (go bench)" "$attach_inproc_ms" "$(ratio "$attach_inproc_ms" "$plain")" "" "$(ratio "$attach_inproc_ms" "$inbox_ms")"
fi
printf '%-44s %10s %10s %10s %10s\n' "hermes box exec RUNNING -- true (attach)" "$attach_ms" "$(ratio "$attach_ms" "$plain")" "$(ratio "$attach_ms" "$version_ms")" "$([[ -n $inbox_ms ]] && ratio "$attach_ms" "$inbox_ms")"
echo "target: attach <= 5 ms"

printf '\n%-44s %10s %10s\n' "CPU (user+sys of the process and children)" "ms/run" "vs true"
printf '%-44s %10s %10s\n' "plain /bin/true" "$plain_cpu" "1.00x"
printf '%-44s %10s %10s\n' "bwrap --unshare-all ... true" "$bwrap_cpu" "$(ratio "$bwrap_cpu" "$plain_cpu")"
printf '%-44s %10s %10s\n' "hermes --version" "$version_cpu" "$(ratio "$version_cpu" "$plain_cpu")"
printf '%-44s %10s %10s\n' "hermes box exec RUNNING -- true (attach)" "$attach_cpu" "$(ratio "$attach_cpu" "$plain_cpu")"
printf '%-44s %10s %10s\n' "box rm + box exec NEW -- true (both counted)" "$create_cpu" "$(ratio "$create_cpu" "$bwrap_cpu") bwrap"

if [[ -z ${SKIP_GO_BENCH:-} ]]; then
	gobench() { # REGEX PACKAGE: one line per benchmark, ms/op and its extra metrics
		(cd "$repo" && go test -run '^$' -bench "$1" -benchtime 10x "$2") |
			awk '/^Benchmark/ {
				extra = ""
				for (i = 5; i < NF; i += 2) if ($(i + 1) == "cpu-ms/op" || $(i + 1) == "ratio" || $(i + 1) == "box/bwrap") extra = extra sprintf("  %s %s", $(i + 1), $i)
				printf "%-44s %10.1f ms%s\n", $1, $3 / 1e6, extra
			}'
	}
	echo
	echo "go test -bench 'Snapshot50MB|Restore50MB' ./internal/box/snapshot (targets: snapshot and restore <= 150 ms)"
	gobench 'Snapshot50MB|Restore50MB' ./internal/box/snapshot
	if [[ -n ${GO_BENCH:-} ]]; then
		echo "go test -bench '$GO_BENCH' ./internal/box"
		gobench "$GO_BENCH" ./internal/box
	fi
fi
