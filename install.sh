#!/usr/bin/env bash
# install.sh: build hermes from this checkout and install it.
#
#   ./install.sh                  # into /usr/local/bin (root) or ~/.local/bin
#   PREFIX=/opt/hermes ./install.sh
#
# Installs PREFIX/bin/hermes, with hermes-agent (Hermes Agent's entry name)
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

echo "Building hermes with $("$GO" version | cut -d' ' -f3) into $bin"
CGO_ENABLED=0 "$GO" build -trimpath \
  -ldflags "-s -w -X github.com/hermes-go/hermes/internal/cli.installMethodFlag=install.sh" \
  -o "$bin/hermes.new" ./cmd/hermes
mv -f "$bin/hermes.new" "$bin/hermes"
ln -sf hermes "$bin/hermes-agent"
ln -sf hermes "$bin/hermes-acp"

"$bin/hermes" version
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "Add $bin to PATH, e.g.: export PATH=\"$bin:\$PATH\"" ;;
esac
