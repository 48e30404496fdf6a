package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/gateway/discordtest"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// killGatewayAtEnd SIGKILLs a gateway a failed test left running.
func killGatewayAtEnd(t *testing.T, home string) {
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(home, "gateway.pid"))
		if err != nil {
			return
		}
		var p struct{ PID int }
		if json.Unmarshal(b, &p) == nil && p.PID > 0 {
			syscall.Kill(p.PID, syscall.SIGKILL)
		}
	})
}

// processGone reports whether pid has exited (gone, or a zombie its
// reaper has not collected yet).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}

var startedPID = regexp.MustCompile(`Gateway started \(pid (\d+)\)`)

func gatewayPIDOf(t *testing.T, res result) int {
	t.Helper()
	m := startedPID.FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatalf("no pid in the start output\n%s", res)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// chat posts one chat completion ("hi") with key and returns the answer text.
func chat(base, key string) string { return chatText(base, key, "hi") }

// chatText posts one chat completion of text with key and returns the answer.
func chatText(base, key, text string) string {
	body, _ := json.Marshal(map[string]any{"model": "hermes-agent", "messages": []map[string]string{{"role": "user", "content": text}}})
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(b, &out) != nil || len(out.Choices) == 0 {
		return string(b)
	}
	return out.Choices[0].Message.Content
}

// `hermes gateway start` detaches the gateway with its log and pid file;
// status sees it and its API server; a second gateway on the same home is
// refused; restart replaces the process; stop drains a running turn and
// ends it.
func TestGatewayStartStatusRestartStop(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	killGatewayAtEnd(t, e.home)
	release := make(chan struct{})
	e.srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		<-release
		return llmtest.Turn{Text: "drained answer"}
	})
	port := testnet.FreePort(t)
	const key = "k-supervised-123456789"
	e.env = append(e.env, "API_SERVER_ENABLED=true", "API_SERVER_PORT="+strconv.Itoa(port), "API_SERVER_KEY="+key)

	res := e.mustRun("gateway", "start")
	pid := gatewayPIDOf(t, res)
	st := e.mustRun("gateway", "status")
	for _, want := range []string{"Gateway: running (pid " + strconv.Itoa(pid), "API server", "healthy", "Platforms: API server"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q\n%s", want, st)
		}
	}
	if again := e.run("gateway", "start"); again.code != 1 || !strings.Contains(again.stderr, "already running (pid "+strconv.Itoa(pid)) {
		t.Errorf("second start:\n%s", again)
	}
	if fg := e.run("gateway", "run"); fg.code != 1 || !strings.Contains(fg.stderr, "already running") {
		t.Errorf("foreground run beside the started gateway:\n%s", fg)
	}

	res = e.mustRun("gateway", "restart")
	pid2 := gatewayPIDOf(t, res)
	if pid2 == pid {
		t.Fatalf("restart kept pid %d", pid)
	}
	if !processGone(pid) {
		t.Errorf("the old gateway (pid %d) still runs after restart", pid)
	}

	// A turn in flight when stop is asked finishes before the process ends.
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	answered := make(chan string, 1)
	go func() { answered <- chat(base, key) }()
	for deadline := waitfor.Deadline(t); len(e.srv.Requests()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the model")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := make(chan result, 1)
	go func() { stopped <- e.run("gateway", "stop") }()
	time.Sleep(300 * time.Millisecond)
	close(release)
	if got := <-answered; got != "drained answer" {
		t.Fatalf("in-flight answer during stop: %q", got)
	}
	if r := <-stopped; r.code != 0 || !strings.Contains(r.stdout, "Gateway stopped.") {
		t.Fatalf("stop:\n%s", r)
	}
	if st := e.run("gateway", "status"); st.code != 3 || !strings.Contains(st.stdout, "Gateway: stopped") {
		t.Errorf("status after stop:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(e.home, "gateway.pid")); err == nil {
		t.Error("gateway.pid left behind after a clean stop")
	}
	if r := e.mustRun("gateway", "stop"); !strings.Contains(r.stdout, "not running") {
		t.Errorf("stop when stopped:\n%s", r)
	}
	logPath := filepath.Join(e.home, "logs", "gateway.log")
	fi, err := os.Stat(logPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("gateway.log: %v %v", fi, err)
	}
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "API server listening") || strings.Count(string(log), "--- hermes gateway start") != 2 {
		t.Errorf("gateway.log:\n%s", log)
	}
	if strings.Contains(string(log), key) || strings.Contains(string(log), fakeOpenRouterKey) {
		t.Error("a key reached gateway.log")
	}
}

// SIGTERM's drain is bounded (HERMES_RESTART_DRAIN_TIMEOUT): a turn stuck
// on a model that never answers is cancelled and the gateway exits 0.
func TestGatewayDrainIsBounded(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	e.srv.SetResponder(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Stall: true} })
	port := testnet.FreePort(t)
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd, _, stderr := e.command(ctx, []string{"API_SERVER_ENABLED=true", "API_SERVER_PORT=" + strconv.Itoa(port),
		"API_SERVER_KEY=k-123456789", "HERMES_RESTART_DRAIN_TIMEOUT=1"}, "gateway", "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitHTTP(t, base+"/health", stderr.String)
	go chat(base, "k-123456789")
	for deadline := waitfor.Deadline(t); len(e.srv.Requests()) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the request never reached the model\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gateway exit: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "did not finish within 1s") {
		t.Errorf("stderr does not say the drain gave up:\n%s", stderr.String())
	}
}

// The gateway's ticker runs a due cron job through the agent and delivers
// the answer to Telegram.
func TestGatewayTicksCronJobs(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	e.srv.SetResponder(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "nightly report: all good"} })
	fake := telegramtest.New("42:CRONE2ETOKEN")
	defer fake.Close()
	past := time.Now().Add(-3 * time.Hour)
	if _, err := cron.NewStore(e.home, func() time.Time { return past }).Add(cron.Job{
		Name: "nightly", Schedule: "every 1h", Prompt: "write the nightly report", Deliver: "telegram:777",
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd, _, stderr := e.command(ctx, []string{"TELEGRAM_BOT_TOKEN=" + fake.Token, "TELEGRAM_BASE_URL=" + fake.URL,
		"GATEWAY_ALLOWED_USERS=11"}, "gateway", "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := fake.WaitSent(t, 777, 1)
	if len(got) != 1 || !strings.Contains(got[0].Text, "nightly report: all good") {
		t.Fatalf("telegram chat 777 got %+v\n%s", got, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gateway exit: %v\n%s", err, stderr.String())
	}
	j, err := cron.NewStore(e.home, nil).Get("nightly")
	if err != nil || j.LastStatus != "ok" || j.LastRunAt.Before(past.Add(3*time.Hour-time.Minute)) {
		t.Fatalf("job after the gateway ran it: %+v %v", j, err)
	}
	runs, _ := cron.NewStore(e.home, nil).Runs(0)
	if len(runs) != 1 {
		t.Errorf("the missed job ran %d times, want once", len(runs))
	}
	res := e.mustRun("sessions", "list", "--source", "cron")
	if !strings.Contains(res.stdout, "write the nightly report") && !strings.Contains(res.stdout, "cron") {
		t.Errorf("no cron session stored:\n%s", res)
	}
}

// In the gateway, cron delivers through the running chat platforms: a job
// delivering to Discord (which has no standalone cron client) reaches the
// channel through the Discord adapter.
func TestGatewayCronDeliversThroughLivePlatforms(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	e.srv.SetResponder(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "standup summary"} })
	dc := discordtest.New("CRON.DISCORD.TOKEN")
	defer dc.Close()
	dc.AddChannel("c55", discordtest.DM, "", "")
	past := time.Now().Add(-2 * time.Hour)
	if _, err := cron.NewStore(e.home, func() time.Time { return past }).Add(cron.Job{
		Name: "standup", Schedule: "every 1h", Prompt: "summarise", Deliver: "discord:c55",
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd, _, stderr := e.command(ctx, []string{"DISCORD_BOT_TOKEN=" + dc.Token, "DISCORD_BASE_URL=" + dc.URL,
		"GATEWAY_ALLOWED_USERS=11"}, "gateway", "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := dc.WaitSent(t, "c55", 1)
	if len(got) != 1 || !strings.Contains(got[0].Content, "standup summary") {
		t.Fatalf("discord channel c55 got %+v\n%s", got, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gateway exit: %v\n%s", err, stderr.String())
	}
}

// A gateway that does not finish its drain within `stop --timeout` is
// killed, and its pid file is cleaned up.
func TestGatewayStopKillsAfterItsTimeout(t *testing.T) {
	e := newE2E(t)
	e.configureModel()
	killGatewayAtEnd(t, e.home)
	e.srv.SetResponder(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Stall: true} })
	port := testnet.FreePort(t)
	const key = "k-stuck-123456789"
	e.env = append(e.env, "API_SERVER_ENABLED=true", "API_SERVER_PORT="+strconv.Itoa(port), "API_SERVER_KEY="+key,
		"HERMES_RESTART_DRAIN_TIMEOUT=600")
	pid := gatewayPIDOf(t, e.mustRun("gateway", "start"))
	go chat("http://127.0.0.1:"+strconv.Itoa(port), key)
	for deadline := waitfor.Deadline(t); len(e.srv.Requests()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the model")
		}
		time.Sleep(20 * time.Millisecond)
	}
	res := e.mustRun("gateway", "stop", "--timeout", "1s")
	if !strings.Contains(res.stdout, "was killed") || !processGone(pid) {
		t.Fatalf("stop of a stuck gateway:\n%s", res)
	}
	if _, err := os.Stat(filepath.Join(e.home, "gateway.pid")); err == nil {
		t.Error("gateway.pid left behind after the kill")
	}
	if st := e.run("gateway", "status"); st.code != 3 || !strings.Contains(st.stdout, "stopped") {
		t.Errorf("status:\n%s", st)
	}
}
