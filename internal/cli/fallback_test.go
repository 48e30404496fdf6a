package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// TestFallbackCommandsEditTheChain: add, list, remove and clear edit
// fallback_providers in config.yaml, keep the rest of the file, and a
// wrong entry is refused naming the key.
func TestFallbackCommandsEditTheChain(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	cfgPath := filepath.Join(ta.home, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte("# my settings\nmodel:\n  provider: openrouter\n  default: a/b\nfallback_model:\n  provider: openai\n  model: legacy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("fallback", "list"); code != 0 || !strings.Contains(ta.stdout.String(), "1. openai/legacy") {
		t.Fatalf("legacy fallback_model not listed: %d %s %s", code, ta.stdout, ta.stderr)
	}
	if code := ta.run("fallback", "add", "anthropic", "claude-sonnet-4"); code != 0 {
		t.Fatalf("add: %d %s", code, ta.stderr)
	}
	if code := ta.run("fallback", "add", "custom", "llama3", "--base-url", "http://localhost:11434/v1", "--key-env", "OLLAMA_KEY"); code != 0 {
		t.Fatalf("add custom: %d %s", code, ta.stderr)
	}
	if code := ta.run("fallback", "add", "custom", "x"); code == 0 || !strings.Contains(ta.stderr.String(), "base_url") {
		t.Fatalf("custom without base_url accepted: %d %s", code, ta.stderr)
	}
	ta.run("fallback", "list")
	want := "primary: openrouter/a/b\n1. openai/legacy\n2. anthropic/claude-sonnet-4\n3. custom/llama3 at http://localhost:11434/v1 (key OLLAMA_KEY)\n"
	if ta.stdout.String() != want {
		t.Fatalf("list:\n%s\nwant:\n%s", ta.stdout, want)
	}
	b, _ := os.ReadFile(cfgPath)
	if !strings.Contains(string(b), "# my settings") || strings.Contains(string(b), "fallback_model") {
		t.Fatalf("config.yaml:\n%s", b)
	}
	if code := ta.run("fallback", "remove", "1"); code != 0 {
		t.Fatalf("remove: %d %s", code, ta.stderr)
	}
	if code := ta.run("fallback", "remove", "anthropic/claude-sonnet-4"); code != 0 {
		t.Fatalf("remove by name: %d %s", code, ta.stderr)
	}
	if code := ta.run("fallback", "remove", "9"); code == 0 {
		t.Fatal("removing a missing entry succeeded")
	}
	ta.run("fallback", "list")
	if got := ta.stdout.String(); !strings.Contains(got, "1. custom/llama3") || strings.Contains(got, "2.") {
		t.Fatalf("after removes:\n%s", got)
	}
	if code := ta.run("fallback", "clear"); code != 0 {
		t.Fatalf("clear: %d %s", code, ta.stderr)
	}
	ta.run("fallback", "list")
	if !strings.Contains(ta.stdout.String(), "No fallback providers") {
		t.Fatalf("after clear: %s", ta.stdout)
	}
	b, _ = os.ReadFile(cfgPath)
	if strings.Contains(string(b), "fallback") || !strings.Contains(string(b), "default: a/b") {
		t.Fatalf("config.yaml after clear:\n%s", b)
	}
}

// TestOneShotFallbackNoticeOnStderr: `hermes -z` whose primary provider
// is down answers from the fallback and says so in one stderr line; the
// answer alone is on stdout.
func TestOneShotFallbackNoticeOnStderr(t *testing.T) {
	down := llmtest.Start()
	down.Close()
	up := llmtest.NewServer(t, llmtest.Turn{Text: "from the fallback"})
	ta := newTestApp(t, nil, "", false)
	cfg := "model:\n  provider: custom\n  default: main-model\n  base_url: " + down.URL + "\n" +
		"fallback_providers:\n  - provider: custom\n    model: spare-model\n    base_url: " + up.URL + "\n" +
		"terminal:\n  cwd: " + t.TempDir() + "\ncompression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(ta.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("-z", "hello"); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.stderr)
	}
	if strings.TrimSpace(ta.stdout.String()) != "from the fallback" {
		t.Fatalf("stdout %q", ta.stdout)
	}
	lines := strings.Split(strings.TrimSpace(ta.stderr.String()), "\n")
	found := 0
	for _, l := range lines {
		if strings.Contains(l, "custom/main-model failed") && strings.Contains(l, "continuing with fallback custom/spare-model") {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("stderr:\n%s", ta.stderr)
	}
}
