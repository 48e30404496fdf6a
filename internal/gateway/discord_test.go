package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/gateway/discordtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// Discord tests must not run in parallel: discordgo's endpoints are
// package variables (UseDiscordBaseURL).

type dcWorld struct {
	model *llmtest.Server
	fake  *discordtest.Server
	dc    *Discord
	done  chan error
	stop  func() error
}

// fastRetry keeps delivery retries short in tests.
var fastRetry = RetryPolicy{Attempts: 2, Base: 100 * time.Millisecond, Max: 300 * time.Millisecond}

func newDiscordFake(t *testing.T) *discordtest.Server {
	fake := discordtest.New("DISCORD.TEST.TOKEN")
	t.Cleanup(fake.Close)
	for _, id := range []string{"d1", "d2", "d3", "d5", "d6", "d7", "d9", "d99"} {
		fake.AddChannel(id, discordtest.DM, "", "")
	}
	fake.AddChannel("general", discordtest.GuildText, "g1", "")
	fake.AddChannel("thr", discordtest.PublicThread, "g1", "general")
	fake.AddChannel("thr2", discordtest.PublicThread, "g1", "general")
	return fake
}

func startDiscord(t *testing.T, fake *discordtest.Server, home string, allowed ...string) *dcWorld {
	t.Helper()
	return startDiscordWith(t, fake, home, chatModel, allowed...)
}

func startDiscordWith(t *testing.T, fake *discordtest.Server, home string, respond func(llmtest.Request) llmtest.Turn, allowed ...string) *dcWorld {
	t.Helper()
	srv := llmtest.NewServer(t)
	srv.SetResponder(respond)
	rt := newRuntime(t, srv, home)
	auth := Authorization{Allowed: map[string]bool{}}
	for _, u := range allowed {
		auth.Allowed[u] = true
	}
	dc, err := NewDiscord(context.Background(), rt, DiscordConfig{Token: fake.Token, BaseURL: fake.URL, Auth: auth,
		RequireMention: true, TypingEvery: 100 * time.Millisecond, ToolProgress: true, Retry: fastRetry,
		ReconnectMax: 500 * time.Millisecond, Warn: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &dcWorld{model: srv, fake: fake, dc: dc, done: make(chan error, 1)}
	go func() { w.done <- dc.Run(ctx) }()
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

func TestDiscordThreeUsersAtOnceAndRefusal(t *testing.T) {
	w := startDiscord(t, newDiscordFake(t), "", "1", "2", "3")
	var wg sync.WaitGroup
	for _, u := range []string{"1", "2", "3"} {
		wg.Go(func() {
			w.fake.SendMessage(u, "d"+u, "hello from "+u)
			got := w.fake.WaitSent(t, "d"+u, 1)
			if len(got) != 1 || got[0].Content != "echo: hello from "+u+" #1" {
				t.Errorf("user %s got %+v", u, got)
			}
		})
	}
	w.fake.SendMessage("99", "d99", "let me in")
	w.fake.SendMessage("99", "d99", "please")
	wg.Wait()
	if first := w.fake.WaitSent(t, "d99", 1); len(first) == 0 {
		t.Fatal("the unlisted user got no refusal")
	}
	// The second message must not get a second refusal. A listed user's
	// message in the same channel is answered after it (a chat's messages
	// are handled in arrival order), and stopping drains what runs.
	w.fake.SendMessage("1", "d99", "ping")
	w.fake.WaitSent(t, "d99", 2)
	_ = w.stop()
	if got := w.fake.Sent("d99"); len(got) != 2 || !strings.Contains(got[0].Content, "not allowed") ||
		!strings.Contains(got[0].Content, "DISCORD_ALLOWED_USERS") || !strings.HasPrefix(got[1].Content, "echo: ping") {
		t.Fatalf("unlisted user's channel got %+v", got)
	}
	if w.fake.Typing("d1") == 0 {
		t.Fatal("no typing indicator was sent")
	}
}

// In a guild channel each user has a session (and must mention the bot);
// in a thread everyone shares one, and once mentioned there the bot
// answers every message of the thread.
func TestDiscordGuildChannelPerUserThreadShared(t *testing.T) {
	w := startDiscord(t, newDiscordFake(t), "", "1", "2")
	bot := "<@" + w.fake.BotID + ">"
	w.fake.SendMessage("1", "general", "not for the bot")
	w.fake.SendMessage("1", "general", bot+" one")
	w.fake.WaitSent(t, "general", 1)
	w.fake.SendMessage("2", "general", bot+" two")
	if got := w.fake.WaitSent(t, "general", 2); len(got) != 2 || got[0].Content != "echo: one #1" || got[1].Content != "echo: two #1" {
		t.Fatalf("guild channel: %+v", got)
	}
	w.fake.SendMessage("2", "thr2", "a thread the bot was not mentioned in")
	w.fake.SendMessage("1", "thr", bot+" first")
	w.fake.WaitSent(t, "thr", 1)
	w.fake.SendMessage("2", "thr", "second") // the bot takes part in the thread now
	if got := w.fake.WaitSent(t, "thr", 2); len(got) != 2 || got[1].Content != "echo: second #2" {
		t.Fatalf("thread: %+v", got)
	}
	if got := w.fake.Sent("thr2"); len(got) != 0 {
		t.Fatalf("answered in a thread without a mention: %+v", got)
	}
}

func TestDiscordLongAnswerInPartsDespite429(t *testing.T) {
	w := startDiscord(t, newDiscordFake(t), "", "7")
	w.fake.FailNext("POST messages", 0.4) // the first part waits out retry_after
	w.fake.SendMessage("7", "d7", "long")
	got := w.fake.WaitSent(t, "d7", 5)
	if len(got) < 5 {
		t.Fatalf("%d parts arrived", len(got))
	}
	var joined strings.Builder
	for i, m := range got {
		if n := len([]rune(m.Content)); n > discordtest.MaxContent {
			t.Fatalf("part %d has %d characters", i+1, n)
		}
		if strings.Count(m.Content, "```")%2 != 0 {
			t.Fatalf("part %d has an unclosed fence", i+1)
		}
		if !strings.HasSuffix(m.Content, "/"+itoa(len(got))+")") {
			t.Fatalf("part %d lacks its (i/N) suffix", i+1)
		}
		joined.WriteString(m.Content)
	}
	if !strings.Contains(joined.String(), "That is all.") {
		t.Fatal("the end of the answer is missing")
	}
	if calls := w.fake.Calls("POST messages"); calls != len(got)+1 {
		t.Fatalf("%d message posts for %d parts and one 429", calls, len(got))
	}
}

func TestDiscordApprovalApprovedAndTimedOut(t *testing.T) {
	w := startDiscord(t, newDiscordFake(t), "", "5", "6")
	w.fake.SendMessage("5", "d5", "chmod")
	asked := w.fake.WaitSent(t, "d5", 2) // tool status, then the question
	if len(asked) != 2 || !strings.Contains(asked[0].Content, "chmod 777") || !strings.Contains(asked[1].Content, "/approve") {
		t.Fatalf("approval prompt: %+v", asked)
	}
	w.fake.SendMessage("5", "d5", "/approve")
	got := w.fake.WaitSent(t, "d5", 4)
	if len(got) != 4 || !strings.Contains(got[3].Content, "changed") {
		t.Fatalf("after /approve: %+v", got)
	}
	// Nobody answers in d6: approvals.timeout (2 s in the test config) denies.
	w.fake.SendMessage("6", "d6", "chmod")
	got = w.fake.WaitSent(t, "d6", 3)
	if len(got) != 3 || !strings.Contains(got[2].Content, "approvals.timeout") || strings.Contains(got[2].Content, "changed") {
		t.Fatalf("timeout: %+v", got)
	}
}

// lastModel is the model named by the last request the fake model got.
func lastModel(srv *llmtest.Server) string {
	reqs := srv.Requests()
	if len(reqs) == 0 {
		return ""
	}
	m, _ := reqs[len(reqs)-1].JSON()["model"].(string)
	return m
}

// A chat resumes its session after a restart, with the model /model chose;
// /new starts over with the configured model.
func TestDiscordResumeAcrossRestartAndCommands(t *testing.T) {
	home := t.TempDir()
	fake := newDiscordFake(t)
	w := startDiscord(t, fake, home, "1")
	fake.SendMessage("1", "d1", "first")
	fake.WaitSent(t, "d1", 1)
	fake.SendMessage("1", "d1", "/model other-model")
	if got := fake.WaitSent(t, "d1", 2); !strings.Contains(got[1].Content, "other-model") {
		t.Fatalf("/model: %+v", got)
	}
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	w2 := startDiscord(t, fake, home, "1")
	fake.SendMessage("1", "d1", "second")
	if got := fake.WaitSent(t, "d1", 3); len(got) != 3 || got[2].Content != "echo: second #2" {
		t.Fatalf("after restart: %+v", got)
	}
	if m := lastModel(w2.model); m != "other-model" {
		t.Fatalf("the resumed session asked model %q", m)
	}
	fake.SendMessage("1", "d1", "/new")
	fake.WaitSent(t, "d1", 4)
	fake.SendMessage("1", "d1", "third")
	if got := fake.WaitSent(t, "d1", 5); len(got) != 5 || got[4].Content != "echo: third #1" {
		t.Fatalf("after /new: %+v", got)
	}
	if m := lastModel(w2.model); m != "fake-model" {
		t.Fatalf("a new session asked model %q", m)
	}
}

// A reply the platform cannot take (down) is kept, delivered when it is
// back; one kept when the gateway stops is delivered by the next run.
func TestDiscordUndeliveredReplyIsKeptAndDelivered(t *testing.T) {
	home := t.TempDir()
	fake := newDiscordFake(t)
	w := startDiscord(t, fake, home, "1", "2")
	fake.SendMessage("1", "d1", "hello")
	fake.WaitSent(t, "d1", 1)

	fake.SetDown(true)
	if err := w.dc.Chat().Deliver(context.Background(), "d1", "while down"); err != nil {
		t.Fatal(err)
	}
	if w.dc.Chat().Undelivered() != 1 {
		t.Fatalf("%d replies kept", w.dc.Chat().Undelivered())
	}
	fake.SetDown(false)
	if got := fake.WaitSent(t, "d1", 2); len(got) != 2 || got[1].Content != "while down" {
		t.Fatalf("after coming back: %+v", got)
	}

	fake.SetDown(true)
	_ = w.dc.Chat().Deliver(context.Background(), "d2", "kept across restart")
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	fake.SetDown(false)
	startDiscord(t, fake, home, "1", "2")
	if got := fake.WaitSent(t, "d2", 1); len(got) != 1 || got[0].Content != "kept across restart" {
		t.Fatalf("after restart: %+v", got)
	}
}

func TestDiscordReconnectsAndStopsOnRevokedToken(t *testing.T) {
	fake := newDiscordFake(t)
	w := startDiscord(t, fake, "", "1")
	fake.SendMessage("1", "d1", "one")
	fake.WaitSent(t, "d1", 1)
	before := fake.Identifies()
	dials := fake.Dials()
	fake.SetDown(true) // drops the gateway connection
	waitfor.Until(t, "a reconnect attempt refused while down", func() bool { return fake.Dials() > dials })
	fake.SetDown(false)
	fake.SendMessage("1", "d1", "two")
	if got := fake.WaitSent(t, "d1", 2); len(got) != 2 || got[1].Content != "echo: two #2" {
		t.Fatalf("after reconnecting: %+v", got)
	}
	if fake.Identifies() <= before {
		t.Fatal("no new gateway handshake")
	}
	fake.Revoke()
	select {
	case err := <-w.done:
		if err == nil || !strings.Contains(err.Error(), "DISCORD_BOT_TOKEN") {
			t.Fatalf("run ended with %v", err)
		}
		w.done <- err
	case <-time.After(time.Until(waitfor.Deadline(t))):
		t.Fatal("a revoked token did not stop the adapter")
	}
}

// A message sent while a turn runs is acknowledged as queued and answered
// after it; tool progress is one status message, edited as calls go on.
func TestDiscordQueuedAckAndToolProgressEdits(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	respond := func(r llmtest.Request) llmtest.Turn {
		msgs := chatBody(r)
		tools := 0
		for _, m := range msgs {
			if m.Role == "tool" {
				tools++
			}
		}
		switch {
		case lastUser(r) == "slow":
			started <- struct{}{}
			<-release
		case lastUser(r) == "two tools" && tools < 2:
			return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"echo step` + itoa(tools+1) + `"}`}}}
		case lastUser(r) == "two tools":
			return llmtest.Turn{Text: "both done"}
		}
		return echo(r)
	}
	fake := newDiscordFake(t)
	startDiscordWith(t, fake, "", respond, "1", "2")
	fake.SendMessage("1", "d1", "slow")
	<-started
	fake.SendMessage("1", "d1", "next")
	got := fake.WaitSent(t, "d1", 1)
	if len(got) != 1 || !strings.Contains(got[0].Content, "Queued (1 ahead)") {
		t.Fatalf("queued ack: %+v", got)
	}
	close(release)
	got = fake.WaitSent(t, "d1", 3)
	if len(got) != 3 || got[1].Content != "echo: slow #1" || got[2].Content != "echo: next #2" {
		t.Fatalf("answers: %+v", got)
	}

	fake.SendMessage("2", "d2", "two tools")
	got = fake.WaitSent(t, "d2", 2)
	if len(got) != 2 || got[1].Content != "both done" {
		t.Fatalf("tool turn: %+v", got)
	}
	if st := got[0]; st.Edits != 1 || !strings.Contains(st.Content, "echo step1") || !strings.Contains(st.Content, "echo step2") {
		t.Fatalf("status message: %+v", st)
	}
}

// Regression: answers of one chat arrived out of order when the first
// one's delivery was slowed (a 429) while the queued message's turn ended
// and its handler delivered at once. A chat's answers follow its messages.
func TestChatAnswersKeepMessageOrder(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	respond := func(r llmtest.Request) llmtest.Turn {
		if lastUser(r) == "slow" {
			started <- struct{}{}
			<-release
		}
		return echo(r)
	}
	fake := newDiscordFake(t)
	startDiscordWith(t, fake, "", respond, "1")
	fake.SendMessage("1", "d1", "slow")
	<-started
	fake.SendMessage("1", "d1", "next")
	if got := fake.WaitSent(t, "d1", 1); len(got) != 1 {
		t.Fatalf("queued ack: %+v", got)
	}
	fake.FailNext("POST messages", 1) // the slow answer waits out a 429
	close(release)
	got := fake.WaitSent(t, "d1", 3)
	if len(got) != 3 || got[1].Content != "echo: slow #1" || got[2].Content != "echo: next #2" {
		t.Fatalf("answers out of order: %+v", got)
	}
}
