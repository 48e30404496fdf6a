package main_test

import (
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestBadToolArgumentsDoNotPoisonSession: a run whose model sent truncated
// tool arguments leaves them in state.db; a later `-c` against a strict
// server (HTTP 400 "invalid function arguments json string" on invalid
// arguments in the history, as vLLM answers) still works, because the
// history is sent with valid JSON arguments. Before the fix every `-c`
// failed with that 400.
func TestBadToolArgumentsDoNotPoisonSession(t *testing.T) {
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf /tm`}}},
		llmtest.Turn{Text: "the call was cut"},
		llmtest.Turn{Text: "resumed fine"},
	)
	e.configureModel()
	first := e.mustRun("chat", "-Q", "--yolo", "-q", "clean up")
	if !strings.Contains(first.stdout, "the call was cut") {
		t.Fatalf("first run:\n%s", first)
	}
	e.srv.StrictToolArguments()
	res := e.run("chat", "-Q", "--yolo", "-c", "-q", "go on")
	if res.code != 0 || !strings.Contains(res.stdout, "resumed fine") {
		t.Fatalf("-c after a call with truncated arguments failed:\n%s", res)
	}
}
