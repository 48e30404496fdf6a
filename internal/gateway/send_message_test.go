package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
)

// sendMessageModel reports progress to its own chat, then to the home
// channel, then tries a chat it was not given, and answers with what the
// last send_message call returned.
func sendMessageModel(r llmtest.Request) llmtest.Turn {
	msgs := chatBody(r)
	sends := 0
	for _, m := range msgs {
		if m.Role == "tool" {
			sends++
		}
	}
	switch sends {
	case 0:
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "send_message", Args: `{"message":"halfway there"}`}}}
	case 1:
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "send_message", Args: `{"target":"telegram","message":"report for the team"}`}}}
	case 2:
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "send_message", Args: `{"target":"telegram:999","message":"leak"}`}}}
	}
	return llmtest.Turn{Text: "last send: " + msgs[len(msgs)-1].Text()}
}

// TestTelegramSendMessageReachesOwnChatAndHomeChannelOnly: a chat
// session's send_message goes to its own chat and the home channel
// (TELEGRAM_HOME_CHANNEL) through the running platform, and is refused
// for any other chat.
func TestTelegramSendMessageReachesOwnChatAndHomeChannelOnly(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte("TELEGRAM_HOME_CHANNEL=777\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t)
	srv.SetResponder(sendMessageModel)
	fake := telegramtest.New("123:TESTTOKEN")
	t.Cleanup(fake.Close)
	router := cron.NewRouter(nil)
	rt := newRuntimeWith(t, srv, home, func(o *session.Options) { o.Messenger = router })
	tg, err := NewTelegram(context.Background(), rt, TelegramConfig{Token: fake.Token, BaseURL: fake.URL, Allowed: map[int64]bool{5: true},
		PollTimeout: 2 * time.Second, TypingEvery: 100 * time.Millisecond, Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	router.Set("telegram", ChatDeliverer{Chat: tg.Chat()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tg.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("telegram run: %v", err)
		}
	}()

	fake.SendText(5, 5, "private", "do the long job")
	got := fake.WaitSent(t, 5, 2)
	if got[0].Text != "halfway there" {
		t.Errorf("first message to the own chat: %q", got[0].Text)
	}
	if !strings.Contains(got[1].Text, "last send:") || !strings.Contains(got[1].Text, "not a chat this session may message") {
		t.Errorf("the final answer should carry the refusal: %q", got[1].Text)
	}
	if team := fake.WaitSent(t, 777, 1); team[0].Text != "report for the team" {
		t.Errorf("home channel got %q", team[0].Text)
	}
	if leaked := fake.Sent(999); len(leaked) != 0 {
		t.Errorf("a chat the session was not given got %+v", leaked)
	}
}
