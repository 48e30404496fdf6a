package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/gateway/slacktest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

type slWorld struct {
	fake *slacktest.Server
	sl   *Slack
	done chan error
	stop func() error
}

func newSlackFake(t *testing.T) *slacktest.Server {
	fake := slacktest.New("xoxb-test-bot", "xapp-test-app")
	t.Cleanup(fake.Close)
	return fake
}

func startSlack(t *testing.T, fake *slacktest.Server, home string, allowed ...string) *slWorld {
	t.Helper()
	return startSlackWith(t, fake, home, chatModel, allowed...)
}

func startSlackWith(t *testing.T, fake *slacktest.Server, home string, respond func(llmtest.Request) llmtest.Turn, allowed ...string) *slWorld {
	t.Helper()
	return startSlackTuned(t, fake, home, respond, nil, allowed...)
}

// startSlackTuned is startSlackWith with tune applied to the Slack before
// it runs (its goroutines read what tune changes).
func startSlackTuned(t *testing.T, fake *slacktest.Server, home string, respond func(llmtest.Request) llmtest.Turn, tune func(*Slack), allowed ...string) *slWorld {
	t.Helper()
	srv := llmtest.NewServer(t)
	srv.SetResponder(respond)
	rt := newRuntime(t, srv, home)
	auth := Authorization{Allowed: map[string]bool{}}
	for _, u := range allowed {
		auth.Allowed[u] = true
	}
	sl, err := NewSlack(context.Background(), rt, SlackConfig{BotToken: fake.BotToken, AppToken: fake.AppToken, APIURL: fake.URL,
		Auth: auth, RequireMention: true, ToolProgress: true, Retry: fastRetry, ReconnectMax: 500 * time.Millisecond,
		Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if tune != nil {
		tune(sl)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &slWorld{fake: fake, sl: sl, done: make(chan error, 1)}
	go func() { w.done <- sl.Run(ctx) }()
	stopped := false
	w.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-w.done
	}
	t.Cleanup(func() { _ = w.stop() })
	return w
}

func TestSlackThreeUsersAtOnceAndRefusal(t *testing.T) {
	w := startSlack(t, newSlackFake(t), "", "U1", "U2", "U3")
	var wg sync.WaitGroup
	for _, u := range []string{"U1", "U2", "U3"} {
		wg.Go(func() {
			w.fake.SendMessage(u, "D"+u, "", "hello from "+u)
			got := w.fake.WaitSent(t, "D"+u, 1)
			if len(got) != 1 || got[0].Text != "echo: hello from "+u+" #1" {
				t.Errorf("user %s got %+v", u, got)
			}
		})
	}
	w.fake.SendMessage("U99", "DU99", "", "let me in")
	w.fake.SendMessage("U99", "DU99", "", "please")
	wg.Wait()
	if first := w.fake.WaitSent(t, "DU99", 1); len(first) == 0 {
		t.Fatal("the unlisted user got no refusal")
	}
	// The second message must not get a second refusal. A listed user's
	// message in the same channel is answered after it (a chat's messages
	// are handled in arrival order), and stopping drains what runs.
	w.fake.SendMessage("U1", "DU99", "", "ping")
	w.fake.WaitSent(t, "DU99", 2)
	w.stop()
	if got := w.fake.Sent("DU99"); len(got) != 2 || !strings.Contains(got[0].Text, "SLACK_ALLOWED_USERS") || !strings.HasPrefix(got[1].Text, "echo: ping") {
		t.Fatalf("unlisted user's channel got %+v", got)
	}
	if n := w.fake.Unacked(); n != 0 {
		t.Fatalf("%d envelopes not acknowledged", n)
	}
}

// In a channel each user has a session (and must mention the bot); a
// thread is shared, answered in the thread; !cmd works as /cmd.
func TestSlackChannelPerUserThreadShared(t *testing.T) {
	w := startSlack(t, newSlackFake(t), "", "U1", "U2")
	bot := "<@" + w.fake.BotUser + "> "
	w.fake.SendMessage("U1", "C1", "", "chatter")
	root := w.fake.SendMessage("U1", "C1", "", bot+"one")
	w.fake.WaitSent(t, "C1", 1)
	w.fake.SendMessage("U2", "C1", "", bot+"two")
	if got := w.fake.WaitSent(t, "C1", 2); len(got) != 2 || got[0].Text != "echo: one #1" || got[1].Text != "echo: two #1" {
		t.Fatalf("channel: %+v", got)
	}
	w.fake.SendMessage("U2", "C1", root, "not yet for the bot")
	w.fake.SendMessage("U1", "C1", root, bot+"first")
	w.fake.WaitSent(t, "C1", 3)
	w.fake.SendMessage("U2", "C1", root, "second")
	got := w.fake.WaitSent(t, "C1", 4)
	if len(got) != 4 || got[3].Text != "echo: second #2" || got[3].ThreadTS != root {
		t.Fatalf("thread: %+v", got)
	}
	w.fake.SendMessage("U2", "C1", root, "!help")
	if got := w.fake.WaitSent(t, "C1", 5); len(got) != 5 || !strings.Contains(got[4].Text, "/new") {
		t.Fatalf("!help: %+v", got)
	}
}

func TestSlackLongAnswerInPartsDespite429(t *testing.T) {
	// The answer is 9,000 characters: split it as if Slack's limit were small.
	w := startSlackTuned(t, newSlackFake(t), "", chatModel, func(sl *Slack) { sl.chat.p = limitPlatform{sl, 2000} }, "U7")
	w.fake.FailNext("chat.postMessage", 1)
	w.fake.SendMessage("U7", "DU7", "", "long")
	got := w.fake.WaitSent(t, "DU7", 5)
	if len(got) < 5 {
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
	if calls := w.fake.Calls("chat.postMessage"); calls != len(got)+1 {
		t.Fatalf("%d posts for %d parts and one 429", calls, len(got))
	}
}

// Slack's msg_too_long makes the core split the part again.
func TestSlackTooLongIsSplitAgain(t *testing.T) {
	// As if the limit were wrong.
	w := startSlackTuned(t, newSlackFake(t), "", chatModel, func(sl *Slack) { sl.chat.p = limitPlatform{sl, 60000} }, "U1")
	text := strings.Repeat("word ", 10000) // 50,000 characters
	if err := w.sl.Chat().Deliver(context.Background(), "DU1", text); err != nil {
		t.Fatal(err)
	}
	got := w.fake.Sent("DU1")
	if len(got) < 2 {
		t.Fatalf("%d messages", len(got))
	}
	for _, m := range got {
		if len(m.Text) > slacktest.MaxText {
			t.Fatalf("a part of %d characters", len(m.Text))
		}
	}
}

func TestSlackApprovalApprovedAndTimedOut(t *testing.T) {
	w := startSlack(t, newSlackFake(t), "", "U5", "U6")
	w.fake.SendMessage("U5", "DU5", "", "chmod")
	asked := w.fake.WaitSent(t, "DU5", 2)
	if len(asked) != 2 || !strings.Contains(asked[0].Text, "chmod 777") || !strings.Contains(asked[1].Text, "/approve") {
		t.Fatalf("approval prompt: %+v", asked)
	}
	w.fake.SendMessage("U5", "DU5", "", "!approve")
	got := w.fake.WaitSent(t, "DU5", 4)
	if len(got) != 4 || !strings.Contains(got[3].Text, "changed") {
		t.Fatalf("after !approve: %+v", got)
	}
	w.fake.SendMessage("U6", "DU6", "", "chmod")
	got = w.fake.WaitSent(t, "DU6", 3)
	if len(got) != 3 || !strings.Contains(got[2].Text, "approvals.timeout") || strings.Contains(got[2].Text, "changed") {
		t.Fatalf("timeout: %+v", got)
	}
}

func TestSlackResumeAcrossRestart(t *testing.T) {
	home := t.TempDir()
	fake := newSlackFake(t)
	w := startSlack(t, fake, home, "U1")
	fake.SendMessage("U1", "DU1", "", "first")
	fake.WaitSent(t, "DU1", 1)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	startSlack(t, fake, home, "U1")
	fake.SendMessage("U1", "DU1", "", "second")
	if got := fake.WaitSent(t, "DU1", 2); len(got) != 2 || got[1].Text != "echo: second #2" {
		t.Fatalf("after restart: %+v", got)
	}
}

func TestSlackUndeliveredReplyIsKeptAndDelivered(t *testing.T) {
	home := t.TempDir()
	fake := newSlackFake(t)
	w := startSlack(t, fake, home, "U1")
	fake.SetDown(true)
	if err := w.sl.Chat().Deliver(context.Background(), "DU1", "while down"); err != nil {
		t.Fatal(err)
	}
	fake.SetDown(false)
	if got := fake.WaitSent(t, "DU1", 1); len(got) != 1 || got[0].Text != "while down" {
		t.Fatalf("after coming back: %+v", got)
	}
	fake.SetDown(true)
	_ = w.sl.Chat().Deliver(context.Background(), "DU2", "kept across restart")
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	fake.SetDown(false)
	startSlack(t, fake, home, "U1")
	if got := fake.WaitSent(t, "DU2", 1); len(got) != 1 || got[0].Text != "kept across restart" {
		t.Fatalf("after restart: %+v", got)
	}
}

func TestSlackReconnectsAndStopsOnRevokedToken(t *testing.T) {
	fake := newSlackFake(t)
	w := startSlack(t, fake, "", "U1")
	fake.SendMessage("U1", "DU1", "", "one")
	fake.WaitSent(t, "DU1", 1)
	before := fake.Opens()
	opens := fake.Calls("apps.connections.open")
	fake.SetDown(true)
	waitfor.Until(t, "a reconnect attempt refused while down", func() bool { return fake.Calls("apps.connections.open") > opens })
	fake.SetDown(false)
	fake.SendMessage("U1", "DU1", "", "two")
	if got := fake.WaitSent(t, "DU1", 2); len(got) != 2 || got[1].Text != "echo: two #2" {
		t.Fatalf("after reconnecting: %+v", got)
	}
	if fake.Opens() <= before {
		t.Fatal("no new Socket Mode connection")
	}
	fake.Revoke()
	select {
	case err := <-w.done:
		if err == nil || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN") {
			t.Fatalf("run ended with %v", err)
		}
		w.done <- err
	case <-time.After(time.Until(waitfor.Deadline(t))):
		t.Fatal("a revoked token did not stop the adapter")
	}
}

// limitPlatform overrides a platform's limit.
type limitPlatform struct {
	Platform
	limit int
}

func (l limitPlatform) Limit() int { return l.limit }
