package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// `hermes status` names the config, provider, model and backend, and lists
// the five most recent sessions, newest first.
func TestStatusSummary(t *testing.T) {
	ta := newTestApp(t, map[string]string{"OPENROUTER_API_KEY": "sk-or-test"}, "", false)
	if code := ta.run("status"); code != 0 || !strings.Contains(ta.stdout.String(), "none yet") {
		t.Fatalf("empty home: %d\n%s%s", code, ta.stdout, ta.stderr)
	}
	if _, err := os.Stat(filepath.Join(ta.home, store.FileName)); err == nil {
		t.Error("status must not create state.db")
	}
	for _, kv := range [][2]string{{"model.provider", "openrouter"}, {"model.default", "anthropic/claude-sonnet-4"}, {"terminal.backend", "box"}} {
		if code := ta.run("config", "set", kv[0], kv[1]); code != 0 {
			t.Fatal(ta.stderr)
		}
	}
	clock := ta.Now()
	st, err := store.Open(filepath.Join(ta.home, store.FileName), store.WithClock(func() time.Time {
		clock = clock.Add(time.Minute)
		return clock
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for i := range 7 {
		s, err := st.CreateSession(ctx, store.NewSession{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SetTitle(ctx, s.ID, fmt.Sprintf("task %d", i)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	st.Close()
	if code := ta.run("status"); code != 0 {
		t.Fatalf("status: %d %s", code, ta.stderr)
	}
	out := ta.stdout.String()
	for _, want := range []string{filepath.Join(ta.home, "config.yaml"), "provider     openrouter", "model        anthropic/claude-sonnet-4", "backend      box (", "task 6", "task 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if i := strings.Index(out, ids[6]); i < 0 || i > strings.Index(out, ids[2]) {
		t.Errorf("want the newest session (%s) first:\n%s", ids[6], out)
	}
	if strings.Contains(out, "task 1") || strings.Count(out, "  task ") != 5 {
		t.Errorf("want exactly the 5 most recent sessions:\n%s", out)
	}
}

// An untitled session is listed by its first prompt, which may come from
// a chat: its escape sequences (an OSC 52 clipboard write) are removed.
func TestStatusFirstPromptWithoutEscapes(t *testing.T) {
	ta := newTestApp(t, map[string]string{"OPENROUTER_API_KEY": "sk-or-test"}, "", false)
	st, err := store.Open(filepath.Join(ta.home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := st.CreateSession(ctx, store.NewSession{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMessage(ctx, s.ID, llm.Message{Role: "user", Content: "hi\x1b]52;c;QUJD\x07 there"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, args := range [][]string{{"status"}, {"sessions", "list"}} {
		ta.stdout.Reset()
		if code := ta.run(args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, ta.stderr)
		}
		if out := ta.stdout.String(); strings.Contains(out, "\x1b") || !strings.Contains(out, "hi there") {
			t.Errorf("%v: %q", args, out)
		}
	}
}
