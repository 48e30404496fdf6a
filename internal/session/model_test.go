package session

import (
	"context"
	"errors"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// SetModel switches one session's model (a provider built from config for
// it, "provider:model" split); other sessions keep the runtime's, and a
// busy session refuses the change.
func TestSetModelSwitchesOneSession(t *testing.T) {
	srv := llmtest.NewServer(t)
	release := make(chan struct{})
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if lastUser(r) == "hold" {
			<-release
		}
		return llmtest.Turn{Text: "ok"}
	})
	rt := newTestRuntime(t, srv, nil)
	ctx := context.Background()
	a, err := rt.Open(ctx, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.Open(ctx, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetModel("", "custom:other-model"); err != nil {
		t.Fatal(err)
	}
	if a.Model() != "other-model" || b.Model() != "fake-model" {
		t.Fatalf("models %q, %q", a.Model(), b.Model())
	}
	for _, s := range []*Session{a, b} {
		turn, _, err := s.Send(ctx, "hi", SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := turn.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if got := reqs[0].JSON()["model"]; got != "other-model" {
		t.Errorf("session a asked model %v", got)
	}
	if got := reqs[1].JSON()["model"]; got != "fake-model" {
		t.Errorf("session b asked model %v", got)
	}

	turn, _, err := a.Send(ctx, "hold", SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetModel("", "third"); !errors.Is(err, ErrBusy) {
		t.Errorf("SetModel during a turn = %v, want ErrBusy", err)
	}
	close(release)
	if _, err := turn.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.SetModel("nonesuch", "x"); err == nil {
		t.Errorf("an unknown provider was accepted")
	}
	if a.Model() != "other-model" {
		t.Errorf("a failed SetModel changed the model to %q", a.Model())
	}
}
