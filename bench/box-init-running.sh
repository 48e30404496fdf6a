#!/usr/bin/env bash
# Issue 26's "running box's init" row: the anonymous (private dirty)
# memory of a box's PID 1 while a command runs in the box
# (`hermes box exec --new T -- sleep 4`, the init's
# /proc/PID/smaps_rollup read on the host one second after it forked the
# command). Binaries are copied with O_DIRECT first: a freshly built file's
# dirty page-cache pages would count as Private_Dirty of its mapping
# (Anonymous is the figure; it excludes them).
#
#   bench/box-init-running.sh              # RUNS=4, this tree
#   BEFORE=/path/to/bindir bench/box-init-running.sh   # also a before build, interleaved
#
# Needs root (boxes) and pgrep.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/after"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/built/" ./cmd/hermes ./cmd/hermes-box-init
for f in hermes hermes-box-init; do
	dd if="$work/built/$f" of="$work/after/$f" bs=1M oflag=direct status=none 2>/dev/null || cp "$work/built/$f" "$work/after/$f"
	chmod +x "$work/after/$f"
done

# anon BINDIR: Anonymous KiB and thread count of a running box's init.
anon() {
	local bin=$1 home hp pid="" p
	home=$(mktemp -d)
	mkdir -p "$home/skills"
	touch "$home/skills/.no-bundled-skills"
	HERMES_HOME=$home "$bin/hermes" box exec --new anon -- sleep 4 >/dev/null 2>&1 &
	hp=$!
	for _ in $(seq 300); do
		for p in $(pgrep -P "$hp" 2>/dev/null); do
			if pgrep -P "$p" sleep >/dev/null 2>&1; then pid=$p; fi
		done
		[ -n "$pid" ] && break
		sleep 0.1
	done
	sleep 1
	if [ -n "$pid" ]; then
		awk -v t="$(ls "/proc/$pid/task" | wc -l)" '/^Anonymous:/{print $2, t}' "/proc/$pid/smaps_rollup"
	else
		echo "? ?"
	fi
	wait "$hp" || true
	rm -rf "$home"
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  runs: $RUNS"
printf '%-8s %16s %8s\n' build "anon KiB" threads
for _ in $(seq "$RUNS"); do
	if [ -n "${BEFORE:-}" ]; then
		printf '%-8s %16s %8s\n' before $(anon "$BEFORE")
	fi
	printf '%-8s %16s %8s\n' after $(anon "$work/after")
done
