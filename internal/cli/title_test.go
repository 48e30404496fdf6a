package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// titleApp is a test App whose model is the fake server srv (answering
// title requests with title and others with an echo), config.yaml
// extended by extra.
func titleApp(t *testing.T, srv *llmtest.Server, stdin, extra, title string) *testApp {
	t.Helper()
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if strings.Contains(string(r.Body), "You write the title of a conversation") {
			return llmtest.Turn{Text: title}
		}
		return llmtest.Turn{Text: "done"}
	})
	ta := newTestApp(t, map[string]string{"PATH": "/usr/bin:/bin"}, stdin, true)
	cfg := "model:\n  provider: custom\n  default: main-model\n  base_url: " + srv.URL + "\n" +
		"terminal:\n  cwd: " + t.TempDir() + "\ncompression:\n  enabled: false\n" + extra
	if err := os.WriteFile(filepath.Join(ta.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ta.home, "skills"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ta.home, "skills", ".no-bundled-skills"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return ta
}

func titleCalls(srv *llmtest.Server) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), "You write the title of a conversation") {
			out = append(out, r)
		}
	}
	return out
}

// `hermes -z` pays for no title call: the session is titled with its
// prompt. A REPL session is titled by the main model after its first
// exchange (the run waits for that call before it exits), and
// `sessions list` shows that title; a -z run with a title model
// configured makes the call too.
func TestTitlesByRunKind(t *testing.T) {
	srv := llmtest.NewServer(t)
	ta := titleApp(t, srv, "", "", "Never used")
	if code := ta.run("-z", "fix the flaky test"); code != 0 {
		t.Fatalf("-z: %d %s", code, ta.stderr)
	}
	if n, c := len(srv.Requests()), len(titleCalls(srv)); n != 1 || c != 0 {
		t.Errorf("-z made %d requests (%d title calls), want 1 and none", n, c)
	}
	if code := ta.run("sessions", "list"); code != 0 || !strings.Contains(ta.stdout.String(), "fix the flaky test") {
		t.Errorf("sessions list after -z: %d %s", code, ta.stdout)
	}

	srv = llmtest.NewServer(t)
	ta = titleApp(t, srv, "how do I rotate logs\n/exit\n", "", "\"Log rotation setup.\"\nbecause the user asked")
	if code := ta.run("--cli"); code != 0 {
		t.Fatalf("REPL: %d %s", code, ta.stderr)
	}
	calls := titleCalls(srv)
	if len(calls) != 1 || calls[0].JSON()["model"] != "main-model" {
		t.Fatalf("REPL title calls = %d (want 1, with the main model)", len(calls))
	}
	if code := ta.run("sessions", "list"); code != 0 || !strings.Contains(ta.stdout.String(), "Log rotation setup") ||
		strings.Contains(ta.stdout.String(), "because") {
		t.Errorf("sessions list after the REPL: %d %s", code, ta.stdout)
	}
	if code := ta.run("--resume", "log rotation", "-z", "and now?"); code != 0 {
		t.Errorf("--resume by the model's title: %d %s", code, ta.stderr)
	}

	srv = llmtest.NewServer(t)
	ta = titleApp(t, srv, "", "auxiliary:\n  title_generation:\n    model: small-model\n", "Flaky test fix")
	if code := ta.run("-z", "fix the flaky test"); code != 0 {
		t.Fatalf("-z: %d %s", code, ta.stderr)
	}
	if calls := titleCalls(srv); len(calls) != 1 || calls[0].JSON()["model"] != "small-model" {
		t.Errorf("-z with a title model: %d title calls, want 1 with small-model", len(calls))
	}
	if code := ta.run("sessions", "list"); code != 0 || !strings.Contains(ta.stdout.String(), "Flaky test fix") {
		t.Errorf("sessions list after -z with a title model: %d %s", code, ta.stdout)
	}
}
