#!/usr/bin/env bash
# Benchmark a two-node hermes sandbox fleet (issue 29) through the E2B JS SDK:
# bench.mjs (create -> echo hi -> kill p50/p99, warm run, CONCURRENT at
# once, an UPLOAD_MB upload) twice: through node A, which owns no sandbox
# (--max-sandboxes 1, filled first: every create is placed on B and every
# call and envd request is proxied A -> B), and directly at node B. Needs
# root, node, npm ci in internal/sandboxserver/testdata/jsclient, and a
# PostgreSQL: HERMES_DATABASE_URL, else a throwaway cluster from
# .ci/postgres-cluster.
#   sudo bench/e2b/fleet.sh              # RUNS=100 WARM_RUNS=200 CONCURRENT=50 UPLOAD_MB=100
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=$(mktemp -d)
chmod 755 "$work"
bin=${HERMES_BIN:-}
if [ -z "$bin" ]; then
  bin=$work/hermes
  go build -o "$bin" ./cmd/hermes
fi
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${pgdir:-}" ]; then "$root/.ci/postgres-cluster" stop "$pgdir" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
url=${HERMES_DATABASE_URL:-}
if [ -z "$url" ]; then
  pgdir=$work/pg
  mkdir -p "$pgdir" && chmod 755 "$pgdir"
  url=$("$root/.ci/postgres-cluster" start "$pgdir")
fi
schema=bench_fleet_$RANDOM$RANDOM
key=bench-$RANDOM$RANDOM$RANDOM
echo "fleet-token-$RANDOM$RANDOM$RANDOM$RANDOM" >"$work/token"
chmod 600 "$work/token"
node_up() { # name api envd max
  HERMES_HOME=$work/$1 HERMES_DATABASE_URL=$url "$bin" sandbox serve --api-addr "$2" --envd-addr "$3" --api-key "$key" \
    --workspace "$work/ws-$1" --node "$1" --catalog-schema "$schema" --fleet-token-file "$work/token" \
    --max-sandboxes "$4" --node-cpu 1000 --node-memory-mb 100000000 2>"$work/$1.log" &
  pids+=($!)
  for _ in $(seq 300); do curl -fs "http://$2/health" >/dev/null && return; sleep 0.1; done
  echo "node $1 did not start:" >&2; cat "$work/$1.log" >&2; exit 1
}
a_api=127.0.0.1:${API_PORT:-39310}; a_envd=127.0.0.1:39311
b_api=127.0.0.1:39312; b_envd=127.0.0.1:39313
node_up a "$a_api" "$a_envd" 1
node_up b "$b_api" "$b_envd" 1000
# Fill node A: from now on it places every create on B.
curl -fs -o /dev/null -H 'Content-Type: application/json' -H "X-API-Key: $key" -d '{"templateID":"base"}' "http://$a_api/sandboxes"
cd "$root/internal/sandboxserver/testdata/jsclient"
export UPLOAD_MB=${UPLOAD_MB:-100}
echo "== through node A (non-owner: placed on B, proxied A -> B)"
E2B_API_URL=http://$a_api E2B_SANDBOX_URL=http://$a_envd E2B_API_KEY=$key node bench.mjs
echo "== directly at node B (the owner)"
E2B_API_URL=http://$b_api E2B_SANDBOX_URL=http://$b_envd E2B_API_KEY=$key node bench.mjs
placed=$(grep -c 'sandbox placed on another node' "$work/a.log" || true)
echo "node A placed $placed sandboxes on B"
