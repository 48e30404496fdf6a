package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// longAnswer is a 9,000+ character answer with a code fence across parts.
func longAnswer() string {
	var b strings.Builder
	b.WriteString("Here you go:\n```python\n")
	for b.Len() < 9000 {
		b.WriteString("print('a line of python that fills the answer up')\n")
	}
	b.WriteString("```\nThat is all.")
	return b.String()
}

// chatModel answers per message: "long" gets longAnswer, "chmod" asks to
// run a dangerous command and then reports the tool result, anything
// else is echoed.
func chatModel(r llmtest.Request) llmtest.Turn {
	msgs := chatBody(r)
	if last := msgs[len(msgs)-1]; last.Role == "tool" {
		return llmtest.Turn{Text: "tool said: " + last.Text()}
	}
	if name, ok := strings.CutPrefix(lastUser(r), "schedule "); ok {
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "cronjob",
			Args: `{"action":"create","schedule":"every 1h","prompt":"report","name":"` + name + `"}`}}}
	}
	switch lastUser(r) {
	case "long":
		return llmtest.Turn{Text: longAnswer(), ChunkSize: 500}
	case "chmod":
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"chmod 777 . && echo changed"}`}}}
	}
	return echo(r)
}

type tgWorld struct {
	fake *telegramtest.Server
	tg   *Telegram
	stop func()
}

func startTelegram(t *testing.T, home string, allowed map[int64]bool) *tgWorld {
	t.Helper()
	return startTelegramWith(t, home, allowed, chatModel)
}

func startTelegramWith(t *testing.T, home string, allowed map[int64]bool, respond func(llmtest.Request) llmtest.Turn) *tgWorld {
	t.Helper()
	srv := llmtest.NewServer(t)
	srv.SetResponder(respond)
	fake := telegramtest.New("123:TESTTOKEN")
	t.Cleanup(fake.Close)
	rt := newRuntime(t, srv, home)
	tg, err := NewTelegram(context.Background(), rt, TelegramConfig{Token: fake.Token, BaseURL: fake.URL, Allowed: allowed,
		PollTimeout: 2 * time.Second, TypingEvery: 100 * time.Millisecond, Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tg.Run(ctx) }()
	w := &tgWorld{fake: fake, tg: tg}
	var once sync.Once
	w.stop = func() {
		once.Do(func() { // a test may stop early to drain; its deferred stop then does nothing
			cancel()
			if err := <-done; err != nil {
				t.Errorf("telegram run: %v", err)
			}
		})
	}
	return w
}

func TestTelegramThreeUsersAtOnceAndRefusal(t *testing.T) {
	w := startTelegram(t, "", map[int64]bool{1: true, 2: true, 3: true})
	defer w.stop()
	var wg sync.WaitGroup
	for _, u := range []int64{1, 2, 3} {
		wg.Go(func() {
			w.fake.SendText(u, u, "private", "hello from "+itoa(int(u)))
			got := w.fake.WaitSent(t, u, 1)
			if len(got) != 1 || got[0].Text != "echo: hello from "+itoa(int(u))+" #1" {
				t.Errorf("user %d got %+v", u, got)
			}
		})
	}
	w.fake.SendText(99, 99, "private", "let me in")
	w.fake.SendText(99, 99, "private", "please")
	wg.Wait()
	if first := w.fake.WaitSent(t, 99, 1); len(first) == 0 {
		t.Fatal("the unlisted user got no refusal")
	}
	// The second message must not get a second refusal. A listed user's
	// message in the same chat is answered after it (a chat's messages
	// are handled in arrival order), and stopping drains what runs.
	w.fake.SendText(1, 99, "private", "ping")
	w.fake.WaitSent(t, 99, 2)
	w.stop()
	got := w.fake.Sent(99)
	if len(got) != 2 || !strings.Contains(got[0].Text, "not allowed") || !strings.HasPrefix(got[1].Text, "echo: ping") {
		t.Fatalf("unlisted user's chat got %+v", got)
	}
	if w.fake.ChatActions(1) == 0 {
		t.Fatal("no typing indicator was sent")
	}
}

func TestTelegramLongAnswerInPartsDespite429(t *testing.T) {
	w := startTelegram(t, "", map[int64]bool{7: true})
	defer w.stop()
	w.fake.FailNext("sendMessage", 1) // the first part waits out retry_after
	w.fake.SendText(7, 7, "private", "long")
	got := w.fake.WaitSent(t, 7, 3)
	if len(got) < 3 {
		t.Fatalf("%d parts arrived", len(got))
	}
	var joined strings.Builder
	for i, m := range got {
		if strings.Count(m.Text, "```")%2 != 0 {
			t.Fatalf("part %d has an unclosed fence", i+1)
		}
		if !strings.HasSuffix(m.Text, "/"+itoa(len(got))+")") {
			t.Fatalf("part %d lacks its (i/N) suffix", i+1)
		}
		joined.WriteString(m.Text)
	}
	if !strings.Contains(joined.String(), "That is all.") {
		t.Fatal("the end of the answer is missing")
	}
	if w.fake.Calls("sendMessage") != len(got)+1 {
		t.Fatalf("%d sendMessage calls for %d parts and one 429", w.fake.Calls("sendMessage"), len(got))
	}
}

func TestTelegramApprovalApprovedAndTimedOut(t *testing.T) {
	w := startTelegram(t, "", map[int64]bool{5: true, 6: true})
	defer w.stop()
	w.fake.SendText(5, 5, "private", "chmod")
	asked := w.fake.WaitSent(t, 5, 1)
	if len(asked) != 1 || !strings.Contains(asked[0].Text, "/approve") || !strings.Contains(asked[0].Text, "chmod 777") ||
		strings.Count(strings.ToLower(asked[0].Text), "approval needed")+strings.Count(asked[0].Text, "needs approval") != 1 {
		t.Fatalf("approval prompt: %+v", asked)
	}
	w.fake.SendText(5, 5, "private", "/approve")
	got := w.fake.WaitSent(t, 5, 3)
	if len(got) != 3 || !strings.Contains(got[2].Text, "changed") {
		t.Fatalf("after /approve: %+v", got)
	}

	// Nobody answers in chat 6: approvals.timeout (2 s in the test config) denies.
	w.fake.SendText(6, 6, "private", "chmod")
	got = w.fake.WaitSent(t, 6, 2)
	if len(got) != 2 || !strings.Contains(got[1].Text, "approvals.timeout") || strings.Contains(got[1].Text, "changed") {
		t.Fatalf("timeout: %+v", got)
	}
}

func TestTelegramCommandsAndResumeAcrossRestart(t *testing.T) {
	home := t.TempDir()
	w := startTelegram(t, home, map[int64]bool{4: true})
	w.fake.SendText(4, 4, "private", "first")
	w.fake.WaitSent(t, 4, 1)
	w.stop()

	w2 := startTelegram(t, home, map[int64]bool{4: true})
	defer w2.stop()
	w2.fake.SendText(4, 4, "private", "second")
	if got := w2.fake.WaitSent(t, 4, 1); len(got) != 1 || got[0].Text != "echo: second #2" {
		t.Fatalf("after restart: %+v", got)
	}
	w2.fake.SendText(4, 4, "private", "/new")
	w2.fake.WaitSent(t, 4, 2)
	w2.fake.SendText(4, 4, "private", "third")
	if got := w2.fake.WaitSent(t, 4, 3); len(got) != 3 || got[2].Text != "echo: third #1" {
		t.Fatalf("after /new: %+v", got)
	}
	w2.fake.SendText(4, 4, "private", "/usage")
	if got := w2.fake.WaitSent(t, 4, 4); len(got) != 4 || !strings.Contains(got[3].Text, "API calls") {
		t.Fatalf("/usage: %+v", got)
	}
}

// Markup Telegram cannot parse ("can't parse entities") is sent again as
// plain text; a reply to a forum topic goes to its thread.
func TestTelegramUnparsableMarkupIsResentPlain(t *testing.T) {
	w := startTelegram(t, "", map[int64]bool{8: true})
	defer w.stop()
	if err := w.tg.Chat().Deliver(context.Background(), "8", "call snake_case and *bold"); err != nil {
		t.Fatal(err)
	}
	got := w.fake.Sent(8)
	if len(got) != 1 || got[0].Text != "call snake_case and *bold" {
		t.Fatalf("got %+v", got)
	}
	if n := w.fake.Calls("sendMessage"); n != 2 {
		t.Fatalf("%d sendMessage calls, want the rejected one and the plain one", n)
	}
}

// A job the model schedules from a chat belongs to that chat: it is
// delivered there (deliver origin) and other chats cannot see it.
func TestTelegramCronjobFromAChatDeliversToThatChat(t *testing.T) {
	home := t.TempDir()
	w := startTelegram(t, home, map[int64]bool{5: true})
	defer w.stop()
	w.fake.SendText(5, 5, "private", "schedule daily")
	got := w.fake.WaitSent(t, 5, 1)
	if len(got) == 0 || !strings.Contains(got[0].Text, "tool said") {
		t.Fatalf("replies %+v", got)
	}
	j, err := cron.NewStore(home, nil).Get("daily")
	if err != nil || j.Origin != "telegram:5" || j.Deliver != "origin" {
		t.Fatalf("job %+v %v: want origin telegram:5, deliver origin", j, err)
	}
}

// The Bot API's URLs hold the bot token and Go's HTTP client quotes the
// URL in network errors: no error leaving the adapter (log lines, the
// undelivered-reply file, cron's last_error) carries the token. (The
// client library masks it as "bot***"; this guards that on upgrades.)
func TestTelegramErrorsNeverQuoteTheToken(t *testing.T) {
	const token = "123456:AAH-secret-bot-token_XYZ"
	fake := telegramtest.New(token)
	rt := newRuntime(t, llmtest.NewServer(t), "")
	tg, err := NewTelegram(context.Background(), rt, TelegramConfig{Token: token, BaseURL: fake.URL, Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	fake.Close() // the Bot API is gone: every call is a network error
	_, sendErr := tg.Send(context.Background(), "42", OutMessage{Text: "hi"})
	editErr := tg.Edit(context.Background(), "42", "1", OutMessage{Text: "hi"})
	typingErr := tg.Typing(context.Background(), "42")
	_, newErr := NewTelegram(context.Background(), rt, TelegramConfig{Token: token, BaseURL: fake.URL})
	for name, err := range map[string]error{"send": sendErr, "edit": editErr, "typing": typingErr, "connect": newErr} {
		if err == nil {
			t.Fatalf("%s: no error from a closed Bot API", name)
		}
		if strings.Contains(err.Error(), "secret-bot-token") {
			t.Errorf("%s error quotes the token: %v", name, err)
		}
	}
}
