#!/usr/bin/env bash
# Issue 14 rows that need no root: start-up (`hermes --version` peak RSS and
# wall), a one-tool `hermes -z` turn, peak RSS while a command prints 100 MB,
# and session_search latency. Each row is printed with its floor or peer
# measured in the same run (`true`, an empty Go program, codex when CODEX_BIN
# is set) and the ratio.
#
#   bench/start-and-output.sh                 # RUNS=20 by default
#   HERMES_BIN=./bin/hermes RUNS=50 bench/start-and-output.sh
#   SKIP_GO_BENCH=1 bench/start-and-output.sh # only the binary rows
#   SEARCH_MESSAGES=100000 bench/start-and-output.sh  # smaller search corpus
#
# Needs /usr/bin/time (Debian package `time`). Peak RSS of a freshly built
# binary depends on how its pages sit in the page cache (large folios map
# more than was touched), so the binary is copied with O_DIRECT first, as a
# binary installed long ago would be read from disk.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20}
OUTPUT_BYTES=${OUTPUT_BYTES:-100000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
if [ -n "${HERMES_BIN:-}" ]; then
	src=$HERMES_BIN
else
	src=$work/hermes.built
	CGO_ENABLED=${CGO_ENABLED:-0} go build -trimpath -ldflags "-s -w" -o "$src" ./cmd/hermes
fi
dd if="$src" of="$work/hermes" bs=1M oflag=direct status=none 2>/dev/null || cp "$src" "$work/hermes"
chmod +x "$work/hermes"
hermes=$work/hermes
printf 'package main\n\nfunc main() {}\n' >"$work/empty.go"
(cd "$work" && GO111MODULE=off CGO_ENABLED=0 go build -o empty empty.go)
bench/dependency-floor.sh "$work"

# median_ms CMD...: median wall time of RUNS runs, in ms.
median_ms() {
	local t=()
	for ((i = 0; i < RUNS; i++)); do
		local a b
		a=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		b=$(date +%s%N)
		t+=($(((b - a) / 1000)))
	done
	printf '%s\n' "${t[@]}" | sort -n | awk '{v[NR]=$1} END{printf "%.2f", v[int((NR+1)/2)]/1000}'
}
# peak_kb CMD...: largest peak RSS over 5 runs, in KiB.
peak_kb() {
	local best=0
	for ((i = 0; i < 5; i++)); do
		local kb
		kb=$(/usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1)
		((kb > best)) && best=$kb
	done
	echo "$best"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f×", a/b; else print "-" }'; }
row() { printf '%-44s %12s %-28s %s\n' "$1" "$2" "$3" "$4"; }

row "measure" "hermes" "floor / peer" "ratio"
v_rss=$(peak_kb "$hermes" --version)
e_rss=$(peak_kb "$work/empty")
row "--version peak RSS (MiB)" "$(awk -v k="$v_rss" 'BEGIN{printf "%.1f", k/1024}')" "$(awk -v k="$e_rss" 'BEGIN{printf "%.1f", k/1024}') (empty Go program)" "$(ratio "$v_rss" "$e_rss")"
f_rss=$(peak_kb "$work/floor")
r_rss=$(peak_kb "$work/required")
mib() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }
row "--version peak RSS vs dependency floor" "$(mib "$v_rss")" "$(mib "$f_rss") (all imports only)" "$(ratio "$v_rss" "$f_rss")"
row "--version peak RSS vs required libraries" "$(mib "$v_rss")" "$(mib "$r_rss") (SDKs etc. only)" "$(ratio "$v_rss" "$r_rss")"
v_ms=$(median_ms "$hermes" --version)
t_ms=$(median_ms true)
f_ms=$(median_ms "$work/floor")
r_ms=$(median_ms "$work/required")
row "--version wall (ms, median)" "$v_ms" "$t_ms (true)" "$(ratio "$v_ms" "$t_ms")"
row "--version wall vs dependency floor" "$v_ms" "$f_ms (all imports only)" "$(ratio "$v_ms" "$f_ms")"
row "--version wall vs required libraries" "$v_ms" "$r_ms (SDKs etc. only)" "$(ratio "$v_ms" "$r_ms")"
if [ -n "${CODEX_BIN:-}" ]; then
	c_rss=$(peak_kb "$CODEX_BIN" --version)
	row "--version peak RSS vs codex (MiB)" "$(awk -v k="$v_rss" 'BEGIN{printf "%.1f", k/1024}')" "$(awk -v k="$c_rss" 'BEGIN{printf "%.1f", k/1024}') (codex)" "$(ratio "$v_rss" "$c_rss")"
fi

# Peak RSS while a command prints OUTPUT_BYTES, against the same turn
# running `true` (the agent's own footprint).
export HERMES_HOME=$work/home
mkdir -p "$HERMES_HOME" "$work/cwd"
script() { printf '{"tool_calls": [{"name": "terminal", "arguments": {"command": "%s"}}]}\n{"text": "done"}\n' "$1" >"$2"; }
script "head -c $OUTPUT_BYTES /dev/zero | tr '\\\\0' a" "$work/big.jsonl"
script "true" "$work/small.jsonl"
chat=(env -C "$work/cwd" "$hermes" chat -q go -Q --yolo --ignore-user-config --provider replay --replay)
big_rss=$(peak_kb "${chat[@]}" "$work/big.jsonl")
small_rss=$(peak_kb "${chat[@]}" "$work/small.jsonl")
row "turn printing $((OUTPUT_BYTES / 1000000)) MB: peak RSS (MiB)" "$(awk -v k="$big_rss" 'BEGIN{printf "%.1f", k/1024}')" "$(awk -v k="$small_rss" 'BEGIN{printf "%.1f", k/1024}') (same turn, \`true\`)" "$(ratio "$big_rss" "$small_rss")"

[ -n "${SKIP_GO_BENCH:-}" ] && exit 0
echo
echo "# hermes -z one-tool turn (go test ./bench/hermes-z)"
go test ./bench/hermes-z -run '^$' -bench . -benchtime "${RUNS}x" | grep -E '^Benchmark'
echo "# session_search (go test ./bench/sessionsearch; HERMES_BENCH_MESSAGES=${SEARCH_MESSAGES:-1000000})"
HERMES_BENCH_MESSAGES=${SEARCH_MESSAGES:-1000000} go test ./bench/sessionsearch -run '^$' -bench . -benchtime 200x -timeout 60m | grep -E '^Benchmark'
