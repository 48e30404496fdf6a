package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
)

// TestTelegramChatToldOfTheFallback: when the primary provider is down
// the chat gets a one-line notice naming the fallback, then the answer.
func TestTelegramChatToldOfTheFallback(t *testing.T) {
	down := llmtest.Start()
	down.Close()
	up := llmtest.NewServer(t, llmtest.Turn{Text: "answered by the spare"})
	home := t.TempDir()
	cfg := "model:\n  provider: custom\n  default: main-model\n  base_url: " + down.URL + "\n" +
		"fallback_providers:\n  - provider: custom\n    model: spare-model\n    base_url: " + up.URL + "\n" +
		"terminal:\n  cwd: " + t.TempDir() + "\ncompression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Load(home, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := session.New(context.Background(), session.Options{Config: loaded, Home: home, UserHome: t.TempDir(),
		Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} }, Platform: "gateway", Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	fake := telegramtest.New("123:TESTTOKEN")
	t.Cleanup(fake.Close)
	tg, err := NewTelegram(context.Background(), rt, TelegramConfig{Token: fake.Token, BaseURL: fake.URL, Allowed: map[int64]bool{5: true},
		PollTimeout: 2 * time.Second, TypingEvery: 100 * time.Millisecond, Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tg.Run(ctx) }()
	defer func() { cancel(); <-done }()
	fake.SendText(5, 5, "private", "hello")
	got := fake.WaitSent(t, 5, 2)
	if len(got) != 2 || !strings.Contains(got[0].Text, "continuing with fallback custom/spare-model") ||
		strings.Contains(got[0].Text, "\n") || got[1].Text != "answered by the spare" {
		t.Fatalf("chat got %+v", got)
	}
}
