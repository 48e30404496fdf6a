package session

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

func TestRunCronAnswersInACronSession(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(echo)
	rt := newTestRuntime(t, srv, nil)
	st := cron.NewStore(rt.opts.Home, nil)
	s := &cron.Scheduler{Store: st, Run: rt.RunCron}
	if _, err := st.Add(cron.Job{Name: "j", Schedule: "every 1h", Prompt: "what day is it"}); err != nil {
		t.Fatal(err)
	}
	run, err := s.RunNow(context.Background(), "j")
	if err != nil || run.Status != "ok" {
		t.Fatalf("run %+v %v", run, err)
	}
	b, _ := os.ReadFile(run.Output)
	if !strings.Contains(string(b), "echo: what day is it") {
		t.Fatalf("output:\n%s", b)
	}
	latest, err := rt.Store().Latest(context.Background(), "")
	if err != nil || latest.Source != CronSource {
		t.Fatalf("latest session %+v %v, want source cron", latest, err)
	}
}

func TestCronjobToolKnowsTheChatOfItsSession(t *testing.T) {
	srv := llmtest.NewServer(t)
	rt := newTestRuntime(t, srv, nil)
	s, err := rt.Open(context.Background(), OpenOptions{Key: "telegram:dm:4242", Source: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Add(
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "cronjob", Args: `{"action":"create","schedule":"0 8 * * *","prompt":"weather","name":"w"}`}}},
		llmtest.Turn{Text: "scheduled"},
	)
	turn, _, err := s.Send(context.Background(), "every morning tell me the weather", SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := turn.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	j, err := cron.NewStore(rt.opts.Home, nil).Get("w")
	if err != nil || j.Origin != "telegram:4242" || j.Deliver != "origin" {
		t.Fatalf("job %+v %v: want origin telegram:4242", j, err)
	}
	for key, want := range map[string]string{
		"telegram:group:-100:7": "telegram:-100", "slack:thread:C1:T9": "slack:C1:T9", "api:abc": "", "": "",
	} {
		if got := originOfKey(key); got != want {
			t.Errorf("originOfKey(%q) = %q, want %q", key, got, want)
		}
	}
}
