package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

func loadTestConfig(t *testing.T, ta *testApp) *config.Loaded {
	t.Helper()
	l, err := config.Load(ta.home, config.LoadOptions{Getenv: ta.Getenv})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestModelFlagsWithoutTerminal(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("model"); code != 1 || !strings.Contains(ta.stderr.String(), "--provider and --model") {
		t.Errorf("no flags, no terminal: %d %s", code, ta.stderr)
	}
	if code := ta.run("model", "--provider", "openrouter", "--model", "anthropic/claude-sonnet-4", "--api-key", "sk-or-secret-abcd"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if strings.Contains(ta.stdout.String(), "secret") {
		t.Errorf("key echoed: %s", ta.stdout)
	}
	l := loadTestConfig(t, ta)
	if l.Config.Model.Provider != "openrouter" || l.Config.Model.Default != "anthropic/claude-sonnet-4" {
		t.Errorf("model = %+v", l.Config.Model)
	}
	if l.DotEnv["OPENROUTER_API_KEY"] != "sk-or-secret-abcd" {
		t.Errorf(".env = %v", l.DotEnv)
	}
	cfg, _ := os.ReadFile(filepath.Join(ta.home, "config.yaml"))
	if strings.Contains(string(cfg), "sk-or") {
		t.Errorf("key in config.yaml: %s", cfg)
	}
	if code := ta.run("model", "--provider", "bogus", "--model", "x"); code != 1 || !strings.Contains(ta.stderr.String(), `"bogus"`) {
		t.Errorf("bad provider: %d %s", code, ta.stderr)
	}
	if code := ta.run("model", "--provider", "custom", "--model", "llama3"); code != 1 || !strings.Contains(ta.stderr.String(), "--base-url") {
		t.Errorf("custom without url: %d %s", code, ta.stderr)
	}
	if code := ta.run("model", "--provider", "custom", "--model", "llama3", "--base-url", "localhost:11434"); code != 1 || !strings.Contains(ta.stderr.String(), "http(s) URL") {
		t.Errorf("custom with bad url: %d %s", code, ta.stderr)
	}
	if l := loadTestConfig(t, ta); l.Config.Model.Provider != "openrouter" {
		t.Errorf("failed runs changed the config: %+v", l.Config.Model)
	}
}

func TestModelInteractiveCustom(t *testing.T) {
	// provider custom (by name), a bad URL then a good one, the key, the model
	// id (typed: the endpoint does not answer /models).
	stdin := "custom\nnot a url\nhttp://127.0.0.1:1/v1\nsk-local-key-7777\nqwen2.5-coder\n"
	ta := newTestApp(t, nil, stdin, true)
	if code := ta.run("model"); code != 0 {
		t.Fatalf("%d %s\n%s", code, ta.stderr, ta.stdout)
	}
	out := ta.stdout.String()
	if !strings.Contains(out, "1) openrouter") || !strings.Contains(out, ") custom") || !strings.Contains(out, ") ai-gateway      Vercel AI Gateway (AI_GATEWAY_API_KEY or VERCEL_OIDC_TOKEN)") ||
		strings.Contains(out, "sk-local-key") {
		t.Errorf("prompt output:\n%s", out)
	}
	l := loadTestConfig(t, ta)
	m := l.Config.Model
	if m.Provider != "custom" || m.Default != "qwen2.5-coder" || m.BaseURL != "http://127.0.0.1:1/v1" || m.APIKey != "sk-local-key-7777" {
		t.Errorf("model = %+v", m)
	}
	if l.DotEnv["MODEL_API_KEY"] != "sk-local-key-7777" {
		t.Errorf("key not in .env: %v", l.DotEnv)
	}

	if !strings.Contains(out, "Could not list the models") {
		t.Errorf("no manual-entry fallback when /models does not answer:\n%s", out)
	}

	// Switching to a built-in provider keeps nothing of the custom endpoint;
	// Enter keeps the default answer, an existing key is not asked for.
	// The models are listed from the provider's /models.
	srv := llmtest.NewServer(t)
	srv.SetModels(llmtest.Model{ID: "gpt-4.1"}, llmtest.Model{ID: "gpt-5"})
	ta.Getenv = func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-env"
		}
		if k == "OPENAI_BASE_URL" {
			return srv.URL
		}
		if k == "HERMES_HOME" {
			return ta.home
		}
		return ""
	}
	ta.Stdin = strings.NewReader("openai\n1\n")
	if code := ta.run("model"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if !strings.Contains(ta.stdout.String(), " 2) gpt-5") {
		t.Errorf("the provider's models were not listed:\n%s", ta.stdout)
	}
	if strings.Contains(ta.stdout.String(), "OPENAI_API_KEY (input hidden") {
		t.Errorf("asked for a key that is set:\n%s", ta.stdout)
	}
	m = loadTestConfig(t, ta).Config.Model
	if m.Provider != "openai" || m.Default != "gpt-4.1" || m.BaseURL != "" {
		t.Errorf("after switch: %+v", m)
	}
	ta.Stdin = strings.NewReader("\n\n")
	if code := ta.run("model"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if m = loadTestConfig(t, ta).Config.Model; m.Provider != "openai" || m.Default != "gpt-4.1" {
		t.Errorf("Enter must keep current choices: %+v", m)
	}
	ta.Stdin = strings.NewReader("")
	if code := ta.run("model"); code != 1 || !strings.Contains(ta.stderr.String(), "input ended") {
		t.Errorf("EOF: %d %s", code, ta.stderr)
	}
}

// TestModelSwitchDropsOldKey: a key saved for a custom endpoint is removed
// when switching to OpenRouter, so it is never sent to openrouter.ai (and
// OPENROUTER_API_KEY is used again); a new custom endpoint drops it too.
func TestModelSwitchDropsOldKey(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("model", "--provider", "custom", "--model", "llama3", "--base-url", "http://10.0.0.5:8000/v1", "--api-key", "sk-custom-only-1234"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if l := loadTestConfig(t, ta); l.Config.Model.APIKey != "sk-custom-only-1234" {
		t.Fatalf("custom key not saved: %+v", l.Config.Model)
	}
	if code := ta.run("model", "--provider", "openrouter", "--model", "anthropic/claude-sonnet-4"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	l := loadTestConfig(t, ta)
	if l.Config.Model.APIKey != "" || l.Config.Model.BaseURL != "" {
		t.Errorf("the custom endpoint's key or URL survived the switch to openrouter: %+v", l.Config.Model)
	}
	if !strings.Contains(ta.stdout.String(), "Removed model.api_key") {
		t.Errorf("stdout = %s", ta.stdout)
	}
	// Same provider, another endpoint, no new key: the old key stays home.
	ta.run("model", "--provider", "custom", "--model", "m", "--base-url", "http://10.0.0.5:8000/v1", "--api-key", "sk-host-a-5678")
	if code := ta.run("model", "--provider", "custom", "--model", "m", "--base-url", "http://10.0.0.6:8000/v1"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if l := loadTestConfig(t, ta); l.Config.Model.APIKey != "" {
		t.Errorf("host A's key kept for host B: %+v", l.Config.Model)
	}
}

// TestModelPresetDefaultModel: `hermes model --provider ai-gateway` without
// --model saves the preset's default model, and the Hermes alias
// openai-api is saved as openai.
func TestModelPresetDefaultModel(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("model", "--provider", "ai-gateway"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	m := loadTestConfig(t, ta).Config.Model
	if m.Provider != "ai-gateway" || m.Default != "anthropic/claude-opus-4.6" {
		t.Errorf("model = %+v", m)
	}
	if !strings.Contains(ta.stdout.String(), "AI_GATEWAY_API_KEY is not set") {
		t.Errorf("no hint for the key:\n%s", ta.stdout)
	}
	if code := ta.run("model", "--provider", "openai-api", "--model", "gpt-5.4"); code != 0 {
		t.Fatalf("%d %s", code, ta.stderr)
	}
	if m := loadTestConfig(t, ta).Config.Model; m.Provider != "openai" {
		t.Errorf("alias saved as %q", m.Provider)
	}
}
