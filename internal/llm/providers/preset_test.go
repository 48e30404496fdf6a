package providers

import (
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/llm/providers/preset"
)

// TestEveryPresetReachesItsEndpoint builds each preset from its first key
// variable and its base URL variable pointed at a fake server speaking the
// preset's wire: the request arrives with that key, on the preset's path.
func TestEveryPresetReachesItsEndpoint(t *testing.T) {
	srv := llmtest.NewServer(t)
	for _, p := range preset.All() {
		if p.BaseURL == "" || p.DefaultModel == "" || p.ContextLength <= 0 || p.Label == "" || len(p.KeyEnv) == 0 {
			t.Errorf("%s: incomplete preset %+v", p.Slug, p)
			continue
		}
		if p.BaseURLEnv == "" {
			continue // no variable to point it at the fake (kimi-coding-cn)
		}
		key := "sk-" + p.Slug + "-secret"
		url := srv.URL
		if p.Wire == preset.Anthropic {
			url = srv.AnthropicURL
		}
		srv.Add(llmtest.Turn{Text: "hello from " + p.Slug})
		prov, err := New(Options{Provider: p.Slug, Getenv: env(map[string]string{p.KeyEnv[0]: key, p.BaseURLEnv: url})})
		if err != nil {
			t.Errorf("%s: %v", p.Slug, err)
			continue
		}
		r, err := ask(t, prov)
		if err != nil || r.Message.Content != "hello from "+p.Slug {
			t.Errorf("%s: %q %v", p.Slug, r.Message.Content, err)
			continue
		}
		reqs := srv.Requests()
		h := reqs[len(reqs)-1].Header
		got := h.Get("Authorization")
		if p.Wire == preset.Anthropic {
			got = h.Get("X-Api-Key")
		} else {
			got = strings.TrimPrefix(got, "Bearer ")
		}
		if got != key {
			t.Errorf("%s: credential sent = %q, want %q", p.Slug, got, key)
		}
	}
}

// TestAIGatewayAcceptsVercelOIDCToken: Vercel documents VERCEL_OIDC_TOKEN
// as an AI Gateway credential; AI_GATEWAY_API_KEY wins when both are set.
// The OIDC token alone does not pick ai-gateway in auto mode (it is set
// for Vercel Sandbox too).
func TestAIGatewayAcceptsVercelOIDCToken(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "a"}, llmtest.Turn{Text: "b"})
	p, err := New(Options{Provider: "ai-gateway", Getenv: env(map[string]string{"VERCEL_OIDC_TOKEN": "oidc-jwt", "AI_GATEWAY_BASE_URL": srv.URL})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ask(t, p); err != nil {
		t.Fatal(err)
	}
	p, _ = New(Options{Provider: "ai-gateway", Getenv: env(map[string]string{"VERCEL_OIDC_TOKEN": "oidc-jwt", "AI_GATEWAY_API_KEY": "vck-key", "AI_GATEWAY_BASE_URL": srv.URL})})
	if _, err := ask(t, p); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()
	if r[0].Header.Get("Authorization") != "Bearer oidc-jwt" || r[1].Header.Get("Authorization") != "Bearer vck-key" {
		t.Errorf("credentials = %q, %q", r[0].Header.Get("Authorization"), r[1].Header.Get("Authorization"))
	}
	if _, err := Resolve(Options{Getenv: env(map[string]string{"VERCEL_OIDC_TOKEN": "oidc-jwt"})}); err == nil {
		t.Error("VERCEL_OIDC_TOKEN alone selected a provider")
	}
	if got, _ := Resolve(Options{Getenv: env(map[string]string{"AI_GATEWAY_API_KEY": "k"})}); got != "ai-gateway" {
		t.Errorf("AI_GATEWAY_API_KEY resolves to %q", got)
	}
	if _, err := New(Options{Provider: "ai-gateway", Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), "AI_GATEWAY_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
}

// TestDefaultModelAndAutoOrder: a key alone gives a provider and its
// default model; the first three providers keep their precedence, and a
// configured base URL is preferred over a later preset's key (so the key
// of DeepSeek is never sent to the custom endpoint).
func TestDefaultModelAndAutoOrder(t *testing.T) {
	if DefaultModel("openrouter") == "" || DefaultModel("custom") != "" {
		t.Errorf("defaults: %q %q", DefaultModel("openrouter"), DefaultModel("custom"))
	}
	if _, err := New(Options{Provider: "openrouter", Getenv: env(map[string]string{"OPENROUTER_API_KEY": "k"})}); err != nil {
		t.Errorf("no model set must use the default: %v", err)
	}
	for _, tt := range []struct {
		env  map[string]string
		base string
		want string
	}{
		{map[string]string{"DEEPSEEK_API_KEY": "d", "OPENAI_API_KEY": "o"}, "", "openai"},
		{map[string]string{"DEEPSEEK_API_KEY": "d"}, "", "deepseek"},
		{map[string]string{"DEEPSEEK_API_KEY": "d"}, "http://127.0.0.1:1/v1", "custom"},
		{map[string]string{"HF_TOKEN": "h"}, "", "huggingface"},
		{map[string]string{"LM_API_KEY": "l"}, "", ""},
	} {
		got, _ := Resolve(Options{BaseURL: tt.base, Getenv: env(tt.env)})
		if got != tt.want {
			t.Errorf("Resolve(%v, %q) = %q, want %q", tt.env, tt.base, got, tt.want)
		}
	}
	if DefaultContextLength("ai-gateway", DefaultModel("ai-gateway")) != 200_000 || DefaultContextLength("ai-gateway", "other") != 0 {
		t.Error("DefaultContextLength")
	}
	if p, ok := preset.Lookup("ai-gateway"); !ok || p.Label != "Vercel AI Gateway" || p.BaseURL != "https://ai-gateway.vercel.sh/v1" {
		t.Errorf("ai-gateway = %+v", p)
	}
}

// TestLMStudioNeedsNoKey: a local server runs without a key.
func TestLMStudioNeedsNoKey(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "local"})
	p, err := New(Options{Provider: "lmstudio", Getenv: env(map[string]string{"LM_BASE_URL": srv.URL})})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ask(t, p); err != nil || r.Message.Content != "local" {
		t.Fatalf("%q %v", r.Message.Content, err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q", h)
	}
}
