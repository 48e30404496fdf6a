package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// clarifyApp is a test app whose model is srv and whose stdin is stdin.
func clarifyApp(t *testing.T, srv *llmtest.Server, stdin string, terminal bool) *testApp {
	ta := newTestApp(t, nil, stdin, terminal)
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\n" +
		"terminal:\n  cwd: " + t.TempDir() + "\ncompression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(ta.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ta.home, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(ta.home, "skills", ".no-bundled-skills"), nil, 0o644)
	return ta
}

// TestREPLClarifyShowsTheQuestionAndTakesTheNextLine: the line chat
// prints the question with numbered choices and the next line answers it.
func TestREPLClarifyShowsTheQuestionAndTakesTheNextLine(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "c1", Name: "clarify", Args: `{"question":"Which port?","choices":["8080","9090"]}`}}},
		llmtest.Turn{Text: "listening on 9090"})
	ta := clarifyApp(t, srv, "start the server\n2\n", true)
	if code := ta.run("chat", "--cli"); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.stderr)
	}
	if !strings.Contains(ta.stderr.String(), "? Which port?\n  1. 8080\n  2. 9090\n") {
		t.Fatalf("question not shown:\n%s", ta.stderr)
	}
	if !strings.Contains(ta.stdout.String(), "listening on 9090") {
		t.Fatalf("answer: %s", ta.stdout)
	}
	if body := string(srv.Requests()[1].Body); !strings.Contains(body, `\"user_response\": \"9090\"`) {
		t.Fatalf("the model read: %s", body)
	}
}

// TestOneShotClarifyNeverWaits: `hermes -z` has nobody to ask: the model
// is told so at once and the run ends.
func TestOneShotClarifyNeverWaits(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "c1", Name: "clarify", Args: `{"question":"Which port?"}`}}},
		llmtest.Turn{Text: "assumed 8080"})
	ta := clarifyApp(t, srv, "", false)
	if code := ta.run("-z", "start the server"); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.stderr)
	}
	if strings.TrimSpace(ta.stdout.String()) != "assumed 8080" {
		t.Fatalf("stdout %q", ta.stdout)
	}
	if body := string(srv.Requests()[1].Body); !strings.Contains(body, "no user to ask") {
		t.Fatalf("the model read: %s", body)
	}
}
