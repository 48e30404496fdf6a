package providers

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

var hi = llm.Request{Model: "x", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}

func ask(t *testing.T, p llm.Provider) (llm.Response, error) {
	t.Helper()
	st, err := p.Stream(context.Background(), hi)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Accumulate(st, nil)
}

func TestResolveAuto(t *testing.T) {
	tests := []struct {
		env  map[string]string
		opts Options
		want string
	}{
		{map[string]string{"OPENROUTER_API_KEY": "a", "ANTHROPIC_API_KEY": "b"}, Options{}, "openrouter"},
		{map[string]string{"ANTHROPIC_AUTH_TOKEN": "b", "OPENAI_API_KEY": "c"}, Options{Provider: "auto"}, "anthropic"},
		{map[string]string{"OPENAI_API_KEY": "c"}, Options{}, "openai"},
		{nil, Options{BaseURL: "http://127.0.0.1:8080/v1"}, "custom"},
		{map[string]string{"OPENROUTER_API_KEY": "a"}, Options{ReplayPath: "f.jsonl"}, "replay"},
		{map[string]string{"OPENROUTER_API_KEY": "a"}, Options{Provider: "Anthropic"}, "anthropic"},
	}
	for _, tt := range tests {
		tt.opts.Getenv = env(tt.env)
		got, err := Resolve(tt.opts)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%+v, env %v) = %q, %v; want %q", tt.opts, tt.env, got, err, tt.want)
		}
	}
	if _, err := Resolve(Options{Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), "hermes config set OPENROUTER_API_KEY") {
		t.Errorf("no provider: %v", err)
	}
	if _, err := Resolve(Options{Provider: "nonesuch"}); err == nil || !strings.Contains(err.Error(), "openrouter, anthropic, openai, ai-gateway") {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestMissingKeyAndSettings(t *testing.T) {
	_, err := New(Options{Provider: "openrouter", Model: "m", Getenv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "OPENROUTER_API_KEY") || !strings.Contains(err.Error(), "hermes config set OPENROUTER_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
	_, err = New(Options{Provider: "anthropic", Model: "m", Getenv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("missing anthropic key: %v", err)
	}
	_, err = New(Options{Provider: "custom", Model: "m", Getenv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "model.base_url") {
		t.Errorf("custom without url: %v", err)
	}
	_, err = New(Options{Provider: "custom", BaseURL: "http://127.0.0.1:1/v1", Getenv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "model.default") {
		t.Errorf("no model: %v", err)
	}
}

func TestBaseURLPrecedenceAndHeaders(t *testing.T) {
	envSrv := llmtest.NewServer(t, llmtest.Turn{Text: "from env url"})
	flagSrv := llmtest.NewServer(t, llmtest.Turn{Text: "from model.base_url"})
	e := env(map[string]string{"OPENROUTER_API_KEY": "sk-or-1", "OPENROUTER_BASE_URL": envSrv.URL})

	p, err := New(Options{Provider: "openrouter", Model: "m", Getenv: e})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ask(t, p); err != nil || r.Message.Content != "from env url" {
		t.Fatalf("env base url: %q %v", r.Message.Content, err)
	}
	h := envSrv.Requests()[0].Header
	if h.Get("Authorization") != "Bearer sk-or-1" || h.Get("HTTP-Referer") == "" || h.Get("X-Title") == "" {
		t.Errorf("openrouter headers = %v", h)
	}

	p, _ = New(Options{Provider: "openrouter", Model: "m", Getenv: e, BaseURL: flagSrv.URL})
	if r, err := ask(t, p); err != nil || r.Message.Content != "from model.base_url" {
		t.Fatalf("explicit base url: %q %v", r.Message.Content, err)
	}
}

func TestAnthropicViaEnv(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "claude here"})
	p, err := New(Options{Provider: "anthropic", Model: "claude-sonnet-4", Getenv: env(map[string]string{
		"ANTHROPIC_API_KEY": "key-a", "ANTHROPIC_AUTH_TOKEN": "tok-b", "ANTHROPIC_BASE_URL": srv.AnthropicURL + "/v1"})})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ask(t, p); err != nil || r.Message.Content != "claude here" {
		t.Fatalf("%q %v", r.Message.Content, err)
	}
	h := srv.Requests()[0].Header
	if h.Get("X-Api-Key") != "key-a" || h.Get("Authorization") != "" {
		t.Errorf("headers = %v", h)
	}
}

func TestRetriesAndUnauthorizedFailsAtOnce(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Status: 503}, llmtest.Turn{Text: "recovered"})
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	p, _ := New(Options{Provider: "custom", Model: "m", BaseURL: srv.URL, Retry: llm.RetryPolicy{Sleep: sleep}})
	if r, err := ask(t, p); err != nil || r.Message.Content != "recovered" || len(slept) != 1 {
		t.Fatalf("%q %v slept %v", r.Message.Content, err, slept)
	}

	srv = llmtest.NewServer(t, llmtest.Turn{Status: 401}, llmtest.Turn{Text: "never"})
	p, _ = New(Options{Provider: "openai", Model: "m", BaseURL: srv.URL, Getenv: env(map[string]string{"OPENAI_API_KEY": "bad"}),
		Retry: llm.RetryPolicy{Sleep: sleep}})
	_, err := ask(t, p)
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || len(srv.Requests()) != 1 {
		t.Fatalf("401: %v after %d requests", err, len(srv.Requests()))
	}
}

func TestRecordAndReplayThroughNew(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "live answer", ToolCalls: []llmtest.Call{{Name: "read_file", Args: `{"path":"a"}`}}})
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	p, err := New(Options{Provider: "custom", Model: "m", BaseURL: srv.URL, APIKey: "sk-never-recorded", RecordPath: path})
	if err != nil {
		t.Fatal(err)
	}
	live, err := ask(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "sk-never-recorded") {
		t.Fatal("key recorded")
	}
	rp, err := New(Options{Provider: "replay", ReplayPath: path})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ask(t, rp)
	if err != nil || got.Message.Content != live.Message.Content || got.Message.ToolCalls[0] != live.Message.ToolCalls[0] {
		t.Fatalf("replay = %+v, %v; live %+v", got.Message, err, live.Message)
	}
}
