package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestXMLTextToolCallRuns: a model served without native tool calling
// (Ollama DeepSeek/GLM/Kimi) writes the Anthropic-XML form as text; hermes
// runs it like a native call. A mistyped model.api_mode is reported on this
// ordinary run, not only by `config check`.
func TestXMLTextToolCallRuns(t *testing.T) {
	e := newE2E(t,
		llmtest.Turn{Text: "I'll write it.\n<function_calls>\n<invoke name=\"write_file\">\n" +
			"<parameter name=\"path\">note.txt</parameter>\n<parameter name=\"content\">hello from xml</parameter>\n" +
			"</invoke>\n</function_calls>"},
		llmtest.Turn{Text: "Written."},
	)
	e.configureModel()
	cfgPath := filepath.Join(e.home, "config.yaml")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(string(data), "model:\n", "model:\n  api_mode: chat_complete\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	res := e.mustRun("chat", "-Q", "--yolo", "-q", "write a note")
	if res.stdout != "Written.\n" {
		t.Errorf("stdout = %q", res.stdout)
	}
	got, err := os.ReadFile(filepath.Join(e.workspace, "note.txt"))
	if err != nil || string(got) != "hello from xml" {
		t.Errorf("note.txt = %q, %v; the XML call did not run", got, err)
	}
	if !strings.Contains(res.stderr, "model.api_mode") || !strings.Contains(res.stderr, "chat_complete") {
		t.Errorf("unknown model.api_mode not reported on stderr:\n%s", res.stderr)
	}
	if len(toolResults(t, e.request(1))) != 1 {
		t.Errorf("the second request has no tool result: %v", e.request(1)["messages"])
	}
}
