#!/usr/bin/env bash
# dependency-floor.sh DIR: builds DIR/floor and DIR/required, the start-up
# floors hermes's own start is measured above (the decision on issue 26:
# start-up rows count above the linked libraries' floor). Run from the
# repository root; the binaries are copied with O_DIRECT, as a binary
# installed long ago would be read from disk.
#   floor     imports every package from outside this module that
#             ./cmd/hermes links: their package inits and nothing of ours;
#   required  imports only the libraries hermes is built on by choice
#             (provider SDKs, MCP, ACP, Connect, SQLite, cobra, YAML, the
#             TUI, the chat platforms).
# Used by bench/start-and-output.sh and bench/box-vs-bwrap.sh.
set -euo pipefail
work=$1
# The dependency floor: a program that only imports (blank) every package
# from outside this module that ./cmd/hermes links, at the versions go.mod
# pins, so it runs exactly their package inits and nothing of ours. Built
# through an overlay, as if it were a command of this module.
{
	printf 'package main\n\nimport (\n'
	go list -deps -f '{{if and .Module (ne .Module.Path "github.com/hermes-go/hermes")}}{{.ImportPath}}{{end}}' ./cmd/hermes |
		grep -v -e '/internal/' -e '/internal$' -e '^vendor/' | sed 's/.*/\t_ "&"/'
	printf ')\n\nfunc main() { println("floor") }\n'
} >"$work/floor.go"
printf '{"Replace": {"%s/cmd/hermes-dependency-floor/main.go": "%s"}}\n' "$PWD" "$work/floor.go" >"$work/overlay.json"
# The same for the libraries hermes is built on by choice of the project
# (official provider SDKs, MCP, ACP, Connect, SQLite, cobra, YAML, the TUI
# and the chat platforms): what no start-up work of ours can go under.
{
	printf 'package main\n\nimport (\n'
	for p in github.com/openai/openai-go/v3 github.com/openai/openai-go/v3/responses \
		github.com/anthropics/anthropic-sdk-go/v2 github.com/modelcontextprotocol/go-sdk/mcp \
		github.com/coder/acp-go-sdk connectrpc.com/connect modernc.org/sqlite github.com/spf13/cobra \
		go.yaml.in/yaml/v4 charm.land/bubbletea/v2 github.com/go-telegram/bot github.com/bwmarrin/discordgo \
		github.com/slack-go/slack; do
		printf '\t_ "%s"\n' "$p"
	done
	printf ')\n\nfunc main() { println("floor") }\n'
} >"$work/required.go"
printf '{"Replace": {"%s/cmd/hermes-dependency-floor/main.go": "%s"}}\n' "$PWD" "$work/required.go" >"$work/overlay-required.json"
for f in floor required; do
	ov=$work/overlay.json
	[ "$f" = required ] && ov=$work/overlay-required.json
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -overlay "$ov" -o "$work/$f.built" ./cmd/hermes-dependency-floor
	dd if="$work/$f.built" of="$work/$f" bs=1M oflag=direct status=none 2>/dev/null || cp "$work/$f.built" "$work/$f"
	chmod +x "$work/$f"
done

