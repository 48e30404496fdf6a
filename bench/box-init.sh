#!/usr/bin/env bash
# Issue 26's box-init rows: start-up wall time and peak RSS of the program
# that runs as every box's PID 1, in the same run as its floor (an empty Go
# program that opens a unix socket pair and exits, as the init's smallest
# possible start) and as hermes itself (the init before hermes-box-init).
# Each program is started RUNS times with no control sockets, so it runs its
# package inits and main's first checks, then exits: start-up only.
#
#   bench/box-init.sh            # RUNS=30
#   RUNS=100 bench/box-init.sh
#
# Needs /usr/bin/time (Debian package `time`). Binaries are copied with
# O_DIRECT first (see start-and-output.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/" ./cmd/hermes ./cmd/hermes-box-init
cat >"$work/floor.go" <<'GO'
package main

import (
	"os"
	"syscall"
)

func main() {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		os.Exit(1)
	}
	syscall.Close(fds[0])
	syscall.Close(fds[1])
	os.Exit(2)
}
GO
(cd "$work" && GO111MODULE=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o floor.built floor.go)
for f in hermes hermes-box-init floor.built; do
	dd if="$work/$f" of="$work/$f.run" bs=1M oflag=direct status=none 2>/dev/null || cp "$work/$f" "$work/$f.run"
	chmod +x "$work/$f.run"
done

# measure NAME ARGS...: median wall (ms) and median peak RSS (KiB) of RUNS starts.
measure() {
	local name=$1
	shift
	local out=$work/$name.times
	: >"$out"
	for _ in $(seq "$RUNS"); do
		/usr/bin/time -f '%e %M' -a -o "$out" "$@" >/dev/null 2>&1 || true
	done
	local wall rss
	# time(1) adds "Command exited with non-zero status N" lines: keep the figures.
	grep -E '^[0-9.]+ [0-9]+$' "$out" >"$out.figures"
	wall=$(awk '{print $1*1000}' "$out.figures" | sort -n | awk -v n="$RUNS" 'NR==int((n+1)/2)')
	rss=$(awk '{print $2}' "$out.figures" | sort -n | awk -v n="$RUNS" 'NR==int((n+1)/2)')
	echo "$name $wall $rss"
}

# /usr/bin/time reports wall in 10 ms steps; the wall column uses a
# nanosecond clock around each start instead.
measure_ns() {
	local name=$1
	shift
	local total=() i t0 t1
	for i in $(seq "$RUNS"); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		t1=$(date +%s%N)
		total+=($(( (t1 - t0) / 1000 )))
	done
	printf '%s\n' "${total[@]}" | sort -n | awk -v n="$RUNS" -v name="$name" 'NR==int((n+1)/2){printf "%s %.2f\n", name, $1/1000}'
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  runs: $RUNS"
printf '%-34s %12s %14s\n' "program (no control sockets)" "wall ms (p50)" "peak RSS MiB"
declare -A wall rss
for row in "floor:$work/floor.built.run" "hermes-box-init:$work/hermes-box-init.run box-init" "hermes box-init:$work/hermes.run box-init"; do
	name=${row%%:*}
	cmd=${row#*:}
	# shellcheck disable=SC2086
	w=$(measure_ns x $cmd | awk '{print $2}')
	# shellcheck disable=SC2086
	r=$(measure x $cmd | awk '{printf "%.1f", $3/1024}')
	wall[$name]=$w
	rss[$name]=$r
	printf '%-34s %12s %14s\n' "$name" "$w" "$r"
done
awk -v a="${wall[hermes-box-init]}" -v f="${wall[floor]}" -v h="${wall[hermes box-init]}" \
	-v ra="${rss[hermes-box-init]}" -v rf="${rss[floor]}" -v rh="${rss[hermes box-init]}" 'BEGIN {
	printf "hermes-box-init vs floor: %.2fx wall (+%.2f ms), +%.1f MiB RSS\n", a/f, a-f, ra-rf
	printf "hermes-box-init vs hermes as init: %.2fx wall, %.2fx RSS\n", a/h, ra/rh
}'
