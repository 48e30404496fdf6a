package providers

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// ResolveAux gives the main provider (the task's model or the main one)
// unless the task names another provider or an endpoint; then a client of
// its own, with the task's key only; replay cannot serve a task.
func TestResolveAux(t *testing.T) {
	srv := llmtest.NewServer(t)
	main := Options{Provider: "custom", Model: "big", BaseURL: srv.URL, APIKey: "main-secret-key"}
	mp, err := New(main)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []AuxSettings{{}, {Provider: "auto"}, {Provider: "main", Model: "small"}} {
		a, err := ResolveAux(main, mp, s, time.Minute)
		if err != nil || !a.Main || a.Provider != mp || a.Model != firstNonEmpty(s.Model, "big") || a.Timeout != time.Minute {
			t.Errorf("ResolveAux(%+v) = %+v, %v; want the main provider", s, a, err)
		}
	}
	a, err := ResolveAux(main, mp, AuxSettings{BaseURL: srv.URL, Model: "tiny", Timeout: time.Second}, time.Minute)
	if err != nil || a.Main || a.Name != "custom" || a.Model != "tiny" || a.Timeout != time.Second {
		t.Fatalf("an endpoint of its own: %+v, %v", a, err)
	}
	if _, err := ResolveAux(main, mp, AuxSettings{Provider: "openrouter"}, time.Minute); err == nil || !strings.Contains(err.Error(), "OPENROUTER_API_KEY") {
		t.Errorf("a provider without its key: %v", err)
	}
	if _, err := ResolveAux(main, mp, AuxSettings{Provider: "replay"}, time.Minute); err == nil {
		t.Error("replay accepted for an auxiliary task")
	}
	if _, err := ResolveAux(main, mp, AuxSettings{Provider: "nonesuch"}, time.Minute); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Errorf("an unknown provider: %v", err)
	}
}
