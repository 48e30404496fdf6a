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
# releases with `go install`.
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
echo "Building hermes with $("$GO" version | cut -d' ' -f3) into $bin"
CGO_ENABLED=0 "$GO" build -trimpath \
  -ldflags "-s -w -X github.com/hermes-go/hermes/internal/cli.installMethodFlag=install.sh" \
  -o "$stage/" ./cmd/hermes ./cmd/hermes-box-init
mv -f "$stage/hermes-box-init" "$bin/hermes-box-init"
mv -f "$stage/hermes" "$bin/hermes"
rmdir "$stage"
ln -sf hermes "$bin/hermes-agent"
ln -sf hermes "$bin/hermes-acp"

"$bin/hermes" version
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "Add $bin to PATH, e.g.: export PATH=\"$bin:\$PATH\"" ;;
esac
