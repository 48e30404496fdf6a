#!/usr/bin/env bash
# `make bench`: the benchmarks that need no root (bench/start-and-output.sh).
# Box rows need root: sudo bench/box-vs-bwrap.sh.
set -euo pipefail
exec "$(dirname "$0")/start-and-output.sh" "$@"
