#!/usr/bin/env bash
# install.sh: build hermes from this checkout and install it.
#
#   ./install.sh                  # into /usr/local/bin (root) or ~/.local/bin
#   PREFIX=/opt/hermes ./install.sh
#
# Installs PREFIX/bin/hermes and hermes-box-init (every box's PID 1, found
# beside hermes), with hermes-agent (Hermes Agent's entry name)
# and hermes-acp (the editors' ACP entry) linked to it, then prints
# `hermes version`. Needs Go 1.26 or newer (https://go.dev/dl/); the build
# uses the module versions pinned in go.sum. `hermes update` installs later
# releases with `go install`. A first build downloads the modules and
# compiles for a few minutes: it says so before, and prints a line every
# HERMES_INSTALL_PROGRESS_SECONDS (15) while it runs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
if [ ! -f go.mod ] || ! grep -q '^module github.com/hermes-go/hermes$' go.mod; then
  echo "install.sh: run it from a hermes checkout (go.mod not found next to it)" >&2
  exit 1
fi
GO=${GO:-go}
if ! command -v "$GO" >/dev/null 2>&1; then
  echo "install.sh: no Go toolchain ($GO not on PATH); install Go 1.26 or newer from https://go.dev/dl/" >&2
  exit 1
fi
if [ -z "${PREFIX:-}" ]; then
  if [ "$(id -u)" = 0 ]; then PREFIX=/usr/local; else PREFIX="$HOME/.local"; fi
fi
bin="$PREFIX/bin"
mkdir -p "$bin"

stage=$(mktemp -d "$bin/.hermes-install.XXXXXX")
ticker=""
cleanup() {
  if [ -n "$ticker" ]; then kill "$ticker" 2>/dev/null || true; fi
  rm -rf "$stage"
}
trap cleanup EXIT
echo "Building hermes and hermes-box-init with $("$GO" version | cut -d' ' -f3) from $(pwd)"
echo "(a first build downloads the Go modules and compiles for a few minutes)"
interval=${HERMES_INSTALL_PROGRESS_SECONDS:-15}
(
  # Its sleep ends with it: an orphan would hold install.sh's output open.
  nap=""
  trap 'if [ -n "$nap" ]; then kill "$nap" 2>/dev/null; fi; exit 0' TERM
  elapsed=0
  while :; do
    sleep "$interval" &
    nap=$!
    wait "$nap"
    elapsed=$((elapsed + interval))
    echo "  still building (${elapsed}s)..."
  done
) &
ticker=$!
CGO_ENABLED=0 "$GO" build -trimpath \
  -ldflags "-s -w -X github.com/hermes-go/hermes/internal/cli.installMethodFlag=install.sh" \
  -o "$stage/" ./cmd/hermes ./cmd/hermes-box-init
kill "$ticker" 2>/dev/null || true
wait "$ticker" 2>/dev/null || true
ticker=""
mv -f "$stage/hermes-box-init" "$bin/hermes-box-init"
mv -f "$stage/hermes" "$bin/hermes"
ln -sf hermes "$bin/hermes-agent"
ln -sf hermes "$bin/hermes-acp"
echo "Installed into $bin:"
echo "  hermes           the agent"
echo "  hermes-box-init  every box's PID 1 (found beside hermes)"
echo "  hermes-agent     -> hermes (Hermes Agent's entry name)"
echo "  hermes-acp       -> hermes (the editors' ACP entry)"

"$bin/hermes" version
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "Add $bin to PATH, e.g.: export PATH=\"$bin:\$PATH\"" ;;
esac
