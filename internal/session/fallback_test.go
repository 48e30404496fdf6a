package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// newRuntimeFromConfig starts a runtime in a fresh HERMES_HOME whose
// config.yaml is cfg (plus a workspace cwd) and whose environment is env.
func newRuntimeFromConfig(t *testing.T, cfg string, env map[string]string, tune func(*Options)) *Runtime {
	t.Helper()
	home, work := t.TempDir(), t.TempDir()
	cfg += "terminal:\n  cwd: " + work + "\ncompression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "HERMES_HOME" {
			return home
		}
		return env[k]
	}
	loaded, err := config.Load(home, config.LoadOptions{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Config: loaded, Home: home, UserHome: t.TempDir(), Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} },
		Warn: func(s string) { t.Log(s) }}
	if tune != nil {
		tune(&o)
	}
	rt, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// downURL is the base URL of a model server that has stopped: nothing
// listens there, so a connection is refused.
func downURL(t *testing.T) string {
	srv := llmtest.Start()
	srv.Close()
	return srv.URL
}

// TestFallbackChainAcrossThreeProviders: the primary answers 429 to every
// attempt (after its retries the turn moves on), the first fallback is
// down (connection refused, at once), the second answers. The person is
// told each move in one line, the stored answer names the model that
// wrote it, each provider received only its own key, and the next turn
// starts on the primary again.
func TestFallbackChainAcrossThreeProviders(t *testing.T) {
	limited := llmtest.NewServer(t)
	limited.SetResponder(func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Status: 429, Error: "rate limited", RetryAfter: "0.01"}
	})
	answering := llmtest.NewServer(t, llmtest.Turn{Text: "answer from the third"}, llmtest.Turn{Text: "second answer"})
	cfg := "model:\n  provider: custom\n  default: primary-model\n  base_url: " + limited.URL + "\n  api_key: sk-primary-key\n" +
		"fallback_providers:\n" +
		"  - provider: custom\n    model: down-model\n    base_url: " + downURL(t) + "\n" +
		"  - provider: openai\n    model: third-model\n"
	rt := newRuntimeFromConfig(t, cfg, map[string]string{"OPENAI_API_KEY": "sk-third-key", "OPENAI_BASE_URL": answering.URL}, nil)
	if got := strings.Join(rt.Fallbacks(), ","); got != "custom/down-model,openai/third-model" {
		t.Fatalf("fallbacks %q", got)
	}
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(SubscribeOptions{})
	defer sub.Close()
	turn, _, err := s.Send(context.Background(), "hello", SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, turn.ID)
	var notices []string
	for _, ev := range evs {
		if ev.Kind == Notice && ev.Fallback {
			notices = append(notices, ev.Text)
		}
	}
	last := evs[len(evs)-1]
	if last.Kind != Final || last.Text != "answer from the third" {
		t.Fatalf("turn ended with %v %q %v", last.Kind, last.Text, last.Err)
	}
	if len(notices) != 2 || !strings.Contains(notices[0], "custom/primary-model failed") || !strings.Contains(notices[0], "429") ||
		!strings.Contains(notices[0], "continuing with fallback custom/down-model") ||
		!strings.Contains(notices[1], "custom/down-model failed") || !strings.Contains(notices[1], "openai/third-model") {
		t.Fatalf("fallback notices: %q", notices)
	}
	if n := len(limited.Requests()); n != 4 {
		t.Errorf("the 429-ing primary got %d requests, want 4 (the first and 3 retries)", n)
	}
	if last.Result.Model != "third-model" {
		t.Errorf("turn result model %q", last.Result.Model)
	}
	for _, r := range limited.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer sk-primary-key" {
			t.Errorf("primary got Authorization %q", got)
		}
	}
	reqs := answering.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer sk-third-key" || reqs[0].JSON()["model"] != "third-model" {
		t.Fatalf("third provider requests: %d %v", len(reqs), reqs)
	}
	stored, err := rt.Store().StoredMessages(context.Background(), s.ID(), false)
	if err != nil {
		t.Fatal(err)
	}
	answer := stored[len(stored)-1]
	if answer.Content != "answer from the third" || answer.Model != "third-model" || answer.Provider != "openai" {
		t.Fatalf("stored answer %q by %q/%q", answer.Content, answer.Provider, answer.Model)
	}
	// The fallback is turn-scoped: the next turn asks the primary first.
	turn, _, _ = s.Send(context.Background(), "again", SendOptions{})
	if res, err := turn.Wait(context.Background()); err != nil || res.Text != "second answer" {
		t.Fatalf("second turn: %q %v", res.Text, err)
	}
	if n := len(limited.Requests()); n != 8 {
		t.Errorf("the primary got %d requests after two turns, want 8", n)
	}
}

// TestFallbackChainThatEndsNamesEveryProvider: when every provider fails
// the turn's error is the last failure, naming each provider tried.
func TestFallbackChainThatEndsNamesEveryProvider(t *testing.T) {
	denied := llmtest.NewServer(t, llmtest.Turn{Status: 401, Error: "invalid key"})
	missing := llmtest.NewServer(t, llmtest.Turn{Status: 404, Error: "The model `gone` does not exist"})
	cfg := "model:\n  provider: custom\n  default: primary-model\n  base_url: " + denied.URL + "\n" +
		"fallback_providers:\n  - provider: custom\n    model: gone\n    base_url: " + missing.URL + "\n"
	rt := newRuntimeFromConfig(t, cfg, nil, nil)
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, err := s.Send(context.Background(), "hello", SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = turn.Wait(context.Background())
	if err == nil {
		t.Fatal("the turn succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"custom/primary-model", "custom/gone", "HTTP 404", "does not exist"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
}

// TestFallbackKeyStaysWithItsHost: an entry pointing a preset provider at
// another base URL without key_env is left out (the preset's key would go
// there), and key_env's key goes only to its entry's endpoint.
func TestFallbackKeyStaysWithItsHost(t *testing.T) {
	primary := llmtest.NewServer(t, llmtest.Turn{Status: 500, Error: "boom", RetryAfter: "0.01"}, llmtest.Turn{Status: 500, Error: "boom", RetryAfter: "0.01"},
		llmtest.Turn{Status: 500, Error: "boom", RetryAfter: "0.01"}, llmtest.Turn{Status: 500, Error: "boom", RetryAfter: "0.01"})
	other := llmtest.NewServer(t, llmtest.Turn{Text: "ok"})
	cfg := "model:\n  provider: custom\n  default: m\n  base_url: " + primary.URL + "\n" +
		"fallback_providers:\n" +
		"  - provider: openai\n    model: x\n    base_url: " + other.URL + "\n" +
		"  - provider: custom\n    model: y\n    base_url: " + other.URL + "\n    key_env: OTHER_KEY\n"
	var warnings []string
	rt := newRuntimeFromConfig(t, cfg, map[string]string{"OPENAI_API_KEY": "sk-openai-secret", "OTHER_KEY": "sk-other"},
		func(o *Options) {
			o.Warn = func(s string) { warnings = append(warnings, s) }
			o.Provider = nil
		})
	if got := strings.Join(rt.Fallbacks(), ","); got != "custom/y" {
		t.Fatalf("fallbacks %q (warnings %q)", got, warnings)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "fallback_providers[0]") || !strings.Contains(warnings[0], "key_env") {
		t.Fatalf("warnings %q", warnings)
	}
	s, err := rt.Open(context.Background(), OpenOptions{Key: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, _ := s.Send(context.Background(), "hello", SendOptions{})
	if res, err := turn.Wait(context.Background()); err != nil || res.Text != "ok" {
		t.Fatalf("%q %v", res.Text, err)
	}
	for _, r := range append(primary.Requests(), other.Requests()...) {
		if strings.Contains(r.Header.Get("Authorization"), "sk-openai-secret") {
			t.Fatalf("the openai key reached %s", r.Path)
		}
	}
	if got := other.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-other" {
		t.Fatalf("key_env entry sent %q", got)
	}
}
