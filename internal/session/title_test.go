package session

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// After its first exchange a session has a title (its first prompt, made
// unique), found by --resume with the title or a prefix of it; no model
// call is added; a title set by /title or `sessions rename` is kept.
// (`--resume "say hi"` failed: sessions had no title.)
func TestFirstExchangeTitlesTheSession(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, nil)
	ctx := context.Background()
	turn := func(s *Session, text string) {
		t.Helper()
		tu, _, err := s.Send(ctx, text, SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tu.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	title := func(s *Session) string {
		t.Helper()
		x, err := rt.Store().Session(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		return x.Title
	}
	a, _ := rt.Open(ctx, OpenOptions{Key: "a"})
	turn(a, "say hi")
	turn(a, "and now something else")
	if got := title(a); got != "say hi" {
		t.Errorf("title after the first exchange = %q, want %q", got, "say hi")
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d model calls for two turns, want 2 (a title costs no call)", n)
	}
	b, _ := rt.Open(ctx, OpenOptions{Key: "b"})
	turn(b, "say hi")
	if got := title(b); got != "say hi #2" {
		t.Errorf("second session's title = %q, want it unique", got)
	}
	for _, ref := range []string{"say hi", "SAY HI #2"} {
		if _, err := rt.Store().Resolve(ctx, ref); err != nil {
			t.Errorf("Resolve(%q): %v", ref, err)
		}
	}
	c, _ := rt.Open(ctx, OpenOptions{Key: "c"})
	turn(c, "look at the deploy "+strings.Repeat("and more words ", 20))
	if got := title(c); !strings.HasPrefix(got, "look at the deploy and more words") || len([]rune(got)) > titleWords {
		t.Errorf("title of a long first prompt: %q", got)
	}
	if err := rt.Store().SetTitle(ctx, c.ID(), "Deploy fix"); err != nil { // /title, sessions rename
		t.Fatal(err)
	}
	turn(c, "and then?")
	if got := title(c); got != "Deploy fix" {
		t.Errorf("a title set by the user became %q", got)
	}
	if got, err := rt.Store().Resolve(ctx, "deploy"); err != nil || got.ID != c.ID() {
		t.Errorf("Resolve by title prefix: %v %v", got.ID, err)
	}
	if _, err := rt.Store().Resolve(ctx, "say"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("a prefix of two titles: %v, want ambiguous", err)
	}
}

// A long first prompt gives a title cut at a word, ≤ 60 characters.
func TestTitleFromLongPrompt(t *testing.T) {
	got := titleFrom("\n  Please investigate why the nightly deploy of the billing service fails with a timeout\nmore")
	if n := len([]rune(got)); n > titleWords || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "Please investigate why") {
		t.Errorf("titleFrom = %q (%d characters)", got, n)
	}
	if strings.Contains(got, "  ") {
		t.Errorf("titleFrom kept runs of spaces: %q", got)
	}
}
