package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

func TestCronCommandsManageJobs(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("cron", "list"); code != 0 || !strings.Contains(ta.stdout.String(), "No cron jobs") {
		t.Fatalf("empty list: %d %s %s", code, ta.stdout, ta.stderr)
	}
	if code := ta.run("cron", "add", "0 9 * * 1-5", "summarise my inbox", "--name", "inbox", "--skill", "email"); code != 0 {
		t.Fatalf("add: %d %s", code, ta.stderr)
	}
	if !strings.Contains(ta.stdout.String(), "next run") || !strings.Contains(ta.stdout.String(), "delivered local") {
		t.Errorf("add output: %s", ta.stdout)
	}
	if code := ta.run("cron", "add", "every 5 fortnights", "x"); code != 1 || !strings.Contains(ta.stderr.String(), `"every 5 fortnights"`) {
		t.Errorf("bad schedule: %d %s", code, ta.stderr)
	}
	if code := ta.run("cron", "add", "every 1h", "x", "--deliver", "carrier-pigeon"); code != 1 || !strings.Contains(ta.stderr.String(), "telegram:") {
		t.Errorf("bad deliver: %d %s", code, ta.stderr)
	}
	ta.run("cron", "pause", "inbox")
	if !strings.Contains(ta.stdout.String(), "paused") {
		t.Errorf("pause: %s %s", ta.stdout, ta.stderr)
	}
	if code := ta.run("cron", "edit", "inbox", "--schedule", "every 2h", "--deliver", "telegram:99"); code != 0 {
		t.Fatalf("edit: %s", ta.stderr)
	}
	ta.run("cron", "resume", "inbox")
	ta.run("cron", "list")
	out := ta.stdout.String()
	for _, want := range []string{"inbox", "every 2h", "scheduled", "telegram:99"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if code := ta.run("cron", "status"); code != 0 || !strings.Contains(ta.stdout.String(), "Jobs: 1 active, 0 paused") ||
		!strings.Contains(ta.stdout.String(), "Ticker: not running") {
		t.Errorf("status: %d %s %s", code, ta.stdout, ta.stderr)
	}
	if code := ta.run("cron", "remove", "inbox"); code != 0 {
		t.Fatalf("remove: %s", ta.stderr)
	}
	if code := ta.run("cron", "remove", "inbox"); code != 1 || !strings.Contains(ta.stderr.String(), "hermes cron list") {
		t.Errorf("remove twice: %d %s", code, ta.stderr)
	}
}

// `hermes cron tick` runs the due job through the agent once, keeps its
// output and delivers it to Telegram; a second tick runs nothing.
func TestCronTickRunsDueJobsAndDelivers(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "all builds green"} })
	tg := telegramtest.New("42:CRONTOKEN")
	defer tg.Close()
	ta := newTestApp(t, map[string]string{"TELEGRAM_BOT_TOKEN": tg.Token, "TELEGRAM_BASE_URL": tg.URL}, "", false)
	work := t.TempDir()
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + srv.URL + "\n" +
		"terminal:\n  cwd: " + work + "\ncompression:\n  enabled: false\n"
	if err := os.WriteFile(filepath.Join(ta.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := ta.Now()
	if code := ta.run("cron", "add", "every 1h", "check the builds", "--name", "builds", "--deliver", "telegram:555"); code != 0 {
		t.Fatalf("add: %s", ta.stderr)
	}
	if code := ta.run("cron", "tick"); code != 0 || ta.stdout.Len() != 0 || len(srv.Requests()) != 0 {
		t.Fatalf("tick before due: %d %q, %d model calls", code, ta.stdout, len(srv.Requests()))
	}
	ta.App.Now = func() time.Time { return start.Add(5 * time.Hour) }
	if code := ta.run("cron", "tick"); code != 0 {
		t.Fatalf("tick: %d %s %s", code, ta.stdout, ta.stderr)
	}
	if !strings.Contains(ta.stdout.String(), "delivered to telegram:555") {
		t.Errorf("tick output: %s", ta.stdout)
	}
	sent := tg.WaitSent(t, 555, 1)
	if len(sent) != 1 || !strings.Contains(sent[0].Text, "all builds green") || !strings.Contains(sent[0].Text, "Cronjob Response: builds") {
		t.Fatalf("telegram got %+v", sent)
	}
	ta.run("cron", "tick")
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("a second tick at the same time called the model again (%d calls)", n)
	}
	j, err := cron.NewStore(ta.home, nil).Get("builds")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(j.LastOutput)
	if err != nil || !strings.Contains(string(b), "all builds green") {
		t.Fatalf("local output %q: %v\n%s", j.LastOutput, err, b)
	}
	if want := start.Add(6 * time.Hour); !j.NextRunAt.Equal(want) {
		t.Errorf("next run %s, want %s", j.NextRunAt, want)
	}
	// `cron run` runs it now, whatever the schedule, and leaves the schedule.
	if code := ta.run("cron", "run", "builds"); code != 0 || !strings.Contains(ta.stdout.String(), "builds): ok") {
		t.Fatalf("cron run: %d %s %s", code, ta.stdout, ta.stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("cron run: %d model calls in all, want 2", n)
	}
	if j2, _ := cron.NewStore(ta.home, nil).Get("builds"); !j2.NextRunAt.Equal(j.NextRunAt) {
		t.Errorf("cron run moved the schedule: %s → %s", j.NextRunAt, j2.NextRunAt)
	}
	if strings.Contains(ta.stderr.String()+ta.stdout.String(), tg.Token) {
		t.Error("the bot token was printed")
	}
}
