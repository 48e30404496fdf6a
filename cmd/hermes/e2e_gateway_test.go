package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// waitHTTP polls url until it answers 200 or the deadline passes.
func waitHTTP(t *testing.T, url string, stderr func() string) {
	t.Helper()
	deadline := waitfor.Deadline(t)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer\n%s", url, stderr())
}

// The gateway's API server answers an OpenAI client, and SIGTERM lets the
// answer in flight finish before the process exits 0.
func TestGatewayAPIServerServesAndDrainsOnSIGTERM(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	release := make(chan struct{})
	e.srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		<-release
		return llmtest.Turn{Text: "drained answer"}
	})
	port := testnet.FreePort(t)
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd, _, stderr := e.command(ctx, []string{"API_SERVER_ENABLED=true", "API_SERVER_PORT=" + strconv.Itoa(port), "API_SERVER_KEY=k-123456789"},
		"gateway", "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitHTTP(t, base+"/health", stderr.String)

	answered := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
			strings.NewReader(`{"model":"hermes-agent","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer k-123456789")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &out)
		if len(out.Choices) == 0 {
			answered <- string(b)
			return
		}
		answered <- out.Choices[0].Message.Content
	}()
	// Wait until the turn reached the model, then stop the gateway.
	for deadline := waitfor.Deadline(t); len(e.srv.Requests()) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the request never reached the model\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	if got := <-answered; got != "drained answer" {
		t.Fatalf("in-flight answer: %q\n%s", got, stderr.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gateway exit: %v\n%s", err, stderr.String())
	}
}

func TestGatewayRefusesOpenBindWithoutKey(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	res := e.runEnv([]string{"API_SERVER_ENABLED=true", "API_SERVER_HOST=0.0.0.0", "API_SERVER_PORT=" + strconv.Itoa(testnet.FreePort(t))}, "gateway", "run")
	if res.code != 1 || !strings.Contains(res.stderr, "API_SERVER_KEY") {
		t.Fatalf("%s", res)
	}
}

// The built gateway talks to a fake Telegram Bot API: an allowed user gets
// the answer, an unlisted one a refusal, and SIGTERM exits 0.
func TestGatewayTelegramEndToEnd(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	e.srv.SetResponder(func(r llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "hi from the agent"} })
	fake := telegramtest.New("42:E2ETOKEN")
	defer fake.Close()
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd, _, stderr := e.command(ctx, []string{"TELEGRAM_BOT_TOKEN=" + fake.Token, "TELEGRAM_BASE_URL=" + fake.URL,
		"GATEWAY_ALLOWED_USERS=11"}, "gateway", "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fake.SendText(11, 11, "private", "hello")
	fake.SendText(12, 12, "private", "hello")
	if got := fake.WaitSent(t, 11, 1); len(got) != 1 || got[0].Text != "hi from the agent" {
		t.Fatalf("allowed user got %+v\n%s", got, stderr.String())
	}
	if got := fake.WaitSent(t, 12, 1); len(got) != 1 || !strings.Contains(got[0].Text, "not allowed") {
		t.Fatalf("unlisted user got %+v", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gateway exit: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), fake.Token) {
		t.Fatal("the bot token reached the log")
	}
}
