#!/usr/bin/env bash
# Benchmark hermes sandbox serve through the E2B JS SDK: create -> echo hi ->
# kill (p50/p99 over RUNS), warm commands.run latency, CONCURRENT sandboxes
# from one client. Needs root, node and `npm ci` in
# internal/sandboxserver/testdata/jsclient.
#   sudo bench/e2b/run.sh                       # RUNS=100 WARM_RUNS=200 CONCURRENT=50
#   HERMES_BIN=/tmp/hermes RUNS=20 sudo -E bench/e2b/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=$(mktemp -d)
bin=${HERMES_BIN:-}
if [ -z "$bin" ]; then
  bin=$work/hermes
  go build -o "$bin" ./cmd/hermes
fi
api=127.0.0.1:${API_PORT:-39300}
envd=127.0.0.1:${ENVD_PORT:-39301}
key=bench-$RANDOM$RANDOM
HERMES_HOME=$work/home "$bin" sandbox serve --api-addr "$api" --envd-addr "$envd" --api-key "$key" \
  --workspace "$work/ws" 2>"$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -fs "http://$api/health" >/dev/null && break; sleep 0.1; done
cd "$root/internal/sandboxserver/testdata/jsclient"
E2B_API_URL=http://$api E2B_SANDBOX_URL=http://$envd E2B_API_KEY=$key node bench.mjs
