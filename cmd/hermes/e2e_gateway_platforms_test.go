package main_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/gateway/discordtest"
	"github.com/hermes-go/hermes/internal/gateway/slacktest"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// countingEcho answers "echo: TEXT #N", N the user messages the model saw
// (N > 1 shows a resumed session).
func countingEcho(r llmtest.Request) llmtest.Turn {
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	n, last := 0, ""
	for _, m := range body.Messages {
		if m.Role == "user" {
			n++
			last = m.Text()
		}
	}
	return llmtest.Turn{Text: "echo: " + last + " #" + strconv.Itoa(n)}
}

// One gateway process serves Telegram, Discord and Slack at once on one
// session runtime; killed (SIGKILL) and restarted it resumes each chat;
// a platform that cannot start (a rejected Slack token) is reported and
// the others keep serving. An unknown user gets a pairing code the
// operator approves with `hermes pairing approve`.
func TestGatewayAllChatPlatformsKillAndResume(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	e.srv.SetResponder(countingEcho)
	tg := telegramtest.New("42:E2ETOKEN")
	defer tg.Close()
	dc := discordtest.New("E2E.DISCORD.TOKEN")
	defer dc.Close()
	dc.AddChannel("d21", discordtest.DM, "", "")
	sl := slacktest.New("xoxb-e2e", "xapp-e2e")
	defer sl.Close()
	env := []string{"TELEGRAM_BOT_TOKEN=" + tg.Token, "TELEGRAM_BASE_URL=" + tg.URL,
		"DISCORD_BOT_TOKEN=" + dc.Token, "DISCORD_BASE_URL=" + dc.URL,
		"SLACK_BOT_TOKEN=" + sl.BotToken, "SLACK_APP_TOKEN=" + sl.AppToken, "SLACK_API_URL=" + sl.URL,
		"GATEWAY_ALLOWED_USERS=11,21,U31"}
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()

	cmd, _, stderr := e.command(ctx, env, "gateway", "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tg.SendText(11, 11, "private", "hi telegram")
	dc.SendMessage("21", "d21", "hi discord")
	sl.SendMessage("U31", "DU31", "", "hi slack")
	sl.SendMessage("U99", "DU99", "", "let me in")
	if got := tg.WaitSent(t, 11, 1); len(got) != 1 || got[0].Text != "echo: hi telegram #1" {
		t.Fatalf("telegram: %+v\n%s", got, stderr.String())
	}
	if got := dc.WaitSent(t, "d21", 1); len(got) != 1 || got[0].Content != "echo: hi discord #1" {
		t.Fatalf("discord: %+v\n%s", got, stderr.String())
	}
	if got := sl.WaitSent(t, "DU31", 1); len(got) != 1 || got[0].Text != "echo: hi slack #1" {
		t.Fatalf("slack: %+v\n%s", got, stderr.String())
	}
	got := sl.WaitSent(t, "DU99", 1)
	if len(got) != 1 || !strings.Contains(got[0].Text, "not allowed") || !strings.Contains(got[0].Text, "pairing approve slack ") {
		t.Fatalf("unlisted slack user: %+v", got)
	}
	// The operator approves the pairing code; the user is let in.
	_, code, _ := strings.Cut(got[0].Text, "pairing approve slack ")
	code, _, _ = strings.Cut(code, ";")
	if res := e.run("pairing", "approve", "slack", code); res.code != 0 || !strings.Contains(res.stdout, "U99") {
		t.Fatalf("pairing approve: %s", res)
	}
	if res := e.run("pairing", "list"); !strings.Contains(res.stdout, "approved  slack    user U99") {
		t.Fatalf("pairing list: %s", res)
	}
	sl.SendMessage("U99", "DU99", "", "now?")
	if got := sl.WaitSent(t, "DU99", 2); len(got) != 2 || got[1].Text != "echo: now? #1" {
		t.Fatalf("paired user: %+v\n%s", got, stderr.String())
	}
	identified := dc.Identifies()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// Restarted with a Slack token that is rejected: Slack is reported,
	// Telegram and Discord resume their chats.
	env2 := append(env[:len(env):len(env)], "SLACK_BOT_TOKEN=xoxb-revoked")
	cmd, _, stderr = e.command(ctx, env2, "gateway", "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Discord delivers a message to the connections open when it is sent
	// (a new session gets no backlog): wait for the restarted gateway's
	// IDENTIFY, as the killed one's socket may still look open.
	for deadline := waitfor.Deadline(t); dc.Identifies() <= identified; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted gateway did not connect to Discord:\n%s", stderr.String())
		}
	}
	tg.SendText(11, 11, "private", "again")
	dc.SendMessage("21", "d21", "again")
	if got := tg.WaitSent(t, 11, 2); len(got) != 2 || got[1].Text != "echo: again #2" {
		t.Fatalf("telegram after restart: %+v\n%s", got, stderr.String())
	}
	if got := dc.WaitSent(t, "d21", 2); len(got) != 2 || got[1].Content != "echo: again #2" {
		t.Fatalf("discord after restart: %+v\n%s", got, stderr.String())
	}
	if !strings.Contains(stderr.String(), "SLACK_BOT_TOKEN") {
		t.Fatalf("the rejected Slack token was not reported:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gateway exit: %v\n%s", err, stderr.String())
	}
	for _, secret := range []string{tg.Token, dc.Token, sl.BotToken, sl.AppToken} {
		if strings.Contains(stderr.String(), secret) {
			t.Fatalf("a token reached the log:\n%s", stderr.String())
		}
	}
}
