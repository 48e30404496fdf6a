#!/usr/bin/env bash
# Drives `hermes acp` by hand, offline, the way an editor does: initialize,
# session/new, session/prompt as JSON-RPC lines on its stdin, with the
# scripted model model.jsonl (--provider replay). Prints every line sent
# (->) and received (<-), then the answer. HERMES names the binary
# (default: hermes on PATH); HERMES_HOME defaults to a fresh directory.
set -euo pipefail
cd "$(dirname "$0")"
hermes=${HERMES:-hermes}
export HERMES_HOME=${HERMES_HOME:-$(mktemp -d)}

coproc ACP { "$hermes" acp --ignore-user-config --provider replay --replay model.jsonl 2>/dev/null; }
exec {to}>&"${ACP[1]}" {from}<&"${ACP[0]}" {ACP[1]}>&-

# ask ID LINE sends LINE and prints what comes back up to the answer to
# request ID (kept in $reply).
ask() {
  echo "-> $2"
  echo "$2" >&"$to"
  while IFS= read -r reply <&"$from"; do
    echo "<- $reply"
    case $reply in *"\"id\":$1,\"result\""* | *"\"id\":$1,\"error\""*) return ;; esac
  done
  echo "hermes acp ended early" >&2
  exit 1
}

ask 1 '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}'
ask 2 '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"'"$PWD"'","mcpServers":[]}}'
sid=$(sed -n 's/.*"sessionId":"\([^"]*\)".*/\1/p' <<<"$reply")
ask 3 '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"'"$sid"'","prompt":[{"type":"text","text":"Is the release ready? Check notes.md"}]}}'
exec {to}>&-
wait "$ACP_PID" || true
echo
echo "stop reason: $(sed -n 's/.*"stopReason":"\([^"]*\)".*/\1/p' <<<"$reply")"
