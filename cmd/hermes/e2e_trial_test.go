package main_test

// Regression tests for problems found by a fresh-user trial of the
// headless agent.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// A stream cut after some text, with no finish reason and no [DONE], is a
// failed run, not a complete answer. (It is retried like a 5xx first: the
// script cuts every attempt.)
func TestCutOffStreamFails(t *testing.T) {
	cut := llmtest.Turn{RawBody: `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"half"}}]}` + "\n\n"}
	e := newE2E(t, cut, cut, cut)
	usage := filepath.Join(t.TempDir(), "usage.json")
	res := e.chatQ("hi", "--yolo", "--usage-file", usage)
	if res.code == 0 || res.stdout != "" {
		t.Fatalf("a cut-off answer must fail with nothing on stdout\n%s", res)
	}
	if !strings.Contains(res.stderr, "before the answer was complete") {
		t.Errorf("the error should say the stream was cut off\n%s", res)
	}
	if u := readUsageFile(t, usage); u.Status != "failed" {
		t.Errorf("usage status = %q, want failed", u.Status)
	}
}

// When the wrap-up call after --max-turns still asks for tools and gives no
// text, the run fails instead of printing nothing with exit 0.
func TestMaxTurnsWithoutFinalAnswerFails(t *testing.T) {
	e := newE2E(t,
		terminalTurn("t1", "echo one"),
		terminalTurn("t2", "echo two"),
		terminalTurn("t3", "echo three"),
	)
	usage := filepath.Join(t.TempDir(), "usage.json")
	res := e.chatQ("loop", "--yolo", "--max-turns", "2", "--usage-file", usage)
	if res.code != 1 {
		t.Fatalf("want exit 1 when no final answer came\n%s", res)
	}
	if !strings.Contains(res.stderr, "ran out before a final answer") {
		t.Errorf("stderr should explain the budget ran out\n%s", res)
	}
	if u := readUsageFile(t, usage); u.Status != "failed" {
		t.Errorf("usage status = %q, want failed", u.Status)
	}
}

// A turn stopped because the same call kept failing exits 1, so scripts can
// tell; the explanation is still printed.
func TestRepeatedFailureExitsNonZero(t *testing.T) {
	bad := llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file", Args: `{"path": "missing.txt"}`}}}
	e := newE2E(t, bad, bad, bad, llmtest.Turn{Text: "never reached"})
	res := e.chatQ("read it", "--yolo")
	if res.code != 1 {
		t.Fatalf("want exit 1\n%s", res)
	}
	if !strings.Contains(res.stdout, "Stopped:") {
		t.Errorf("the stop explanation should be the printed answer\n%s", res)
	}
}

// A provider error that echoes the API key does not print it or store it.
func TestProviderErrorDoesNotEchoKey(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Status: 401, Error: "invalid api key " + fakeOpenRouterKey})
	usage := filepath.Join(t.TempDir(), "usage.json")
	res := e.chatQ("hi", "--yolo", "--usage-file", usage)
	if res.code == 0 {
		t.Fatalf("want failure\n%s", res)
	}
	data, _ := os.ReadFile(usage)
	if strings.Contains(res.stderr, fakeOpenRouterKey) || strings.Contains(string(data), fakeOpenRouterKey) {
		t.Errorf("the key leaked:\nstderr: %s\nusage: %s", res.stderr, data)
	}
	if !strings.Contains(res.stderr, "[REDACTED]") {
		t.Errorf("the error should still be shown, redacted\n%s", res)
	}
}

// Secrets are kept from the file tools: read_file of HERMES_HOME/.env is
// refused (the local backend protects it by identity, issue 15) and
// search_files finds nothing in it; neither the model, the session store
// nor a recording sees the key.
func TestFileToolsRedactSecrets(t *testing.T) {
	const dotEnvKey = "sk-ant-DOTENVSECRET-0123456789"
	e := newE2E(t)
	e.srv.Add(
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "read", Name: "read_file", Args: args(map[string]any{"path": filepath.Join(e.home, ".env")})},
			{ID: "grep", Name: "search_files", Args: args(map[string]any{"pattern": "DOTENVSECRET", "path": e.home})},
		}},
		llmtest.Turn{Text: "done"},
	)
	if err := os.WriteFile(filepath.Join(e.home, ".env"), []byte("ANTHROPIC_API_KEY="+dotEnvKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "rec.jsonl")
	e.mustRun("chat", "-Q", "--yolo", "--provider", "openrouter", "--model", "m", "--record", record, "-q", "look")
	results := toolResults(t, e.request(1))
	for id, out := range results {
		if strings.Contains(out, dotEnvKey) {
			t.Errorf("%s result sent to the model holds the key: %s", id, out)
		}
	}
	if !strings.Contains(results["read"], "permission denied") {
		t.Errorf("read_file of .env should be refused: %s", results["read"])
	}
	for _, p := range []string{filepath.Join(e.home, "state.db"), filepath.Join(e.home, "state.db-wal"), record} {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), dotEnvKey) {
			t.Errorf("%s holds the key", p)
		}
	}
}

// Unknown toolsets are an error; Hermes toolsets this build lacks warn.
func TestToolsetValidation(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "ok"})
	res := e.chatQ("hi", "-t", "bogus")
	if res.code == 0 || !strings.Contains(res.stderr, "unknown toolset bogus") {
		t.Errorf("-t bogus should fail naming the toolset\n%s", res)
	}
	res = e.chatQ("hi", "-t", "image_gen,file")
	if res.code != 0 || !strings.Contains(res.stderr, "toolset image_gen is not available") {
		t.Errorf("-t image_gen,file should run with a warning about image_gen\n%s", res)
	}
}

// A blank prompt is an error, not a model call.
func TestBlankPromptIsRejected(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "should not be asked"})
	res := e.chatQ("   ")
	if res.code == 0 || len(e.srv.Requests()) != 0 {
		t.Fatalf("a blank -q must fail before any model call\n%s", res)
	}
}

// After a turn that ended without an answer (here a 500 that exhausted
// retries is replaced by a non-retryable 400), the next turn keeps user and
// assistant messages alternating.
func TestInterruptedTurnKeepsAlternation(t *testing.T) {
	e := newE2E(t,
		llmtest.Turn{Status: 400, Error: "bad request"},
		llmtest.Turn{Text: "second answer"},
	)
	e.configureModel()
	if res := e.run("chat", "-Q", "-q", "first question"); res.code == 0 {
		t.Fatalf("first run should fail\n%s", res)
	}
	e.mustRun("chat", "-Q", "-c", "-q", "second question")
	msgs := chatMessages(t, e.request(1))
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == "user" && msgs[i-1].Role == "user" {
			t.Fatalf("two user messages in a row at %d: %+v", i, msgs)
		}
	}
}

// `hermes chat` accepts --usage-file like `hermes -z`.
func TestChatAcceptsUsageFile(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "ok", Usage: llm.Usage{InputTokens: 12, OutputTokens: 3}})
	usage := filepath.Join(t.TempDir(), "usage.json")
	e.mustRun("chat", "-Q", "--provider", "openrouter", "--model", "m", "--usage-file", usage, "-q", "hi")
	if u := readUsageFile(t, usage); u.Status != "completed" || *u.OutputTokens != 3 {
		t.Errorf("usage = %+v", u)
	}
}
