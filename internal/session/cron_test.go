package session

import (
	"context"
	"encoding/json"
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
		// the gateway's keys (gateway.SessionKey)
		"agent:main:telegram:dm:4242": "telegram:4242", "agent:main:telegram:group:-100:7": "telegram:-100",
		"agent:main:slack:group:C1:1700000000.0001": "slack:C1", "agent:main:discord:dm:99": "discord:99",
		"api_server:api_1": "", "agent:main:": "",
	} {
		if got := originOfKey(key); got != want {
			t.Errorf("originOfKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// A cron run answers for its job's chat: its cronjob tool lists that
// chat's jobs only, so a job made from one chat cannot read the prompts
// of another chat's jobs and deliver them to its own.
func TestCronRunSeesOnlyItsChatsJobs(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if strings.Contains(string(r.Body), `"role":"tool"`) {
			var body struct {
				Messages []llmtest.ChatMessage `json:"messages"`
			}
			_ = json.Unmarshal(r.Body, &body)
			return llmtest.Turn{Text: "jobs: " + body.Messages[len(body.Messages)-1].Text()}
		}
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "cronjob", Args: `{"action":"list"}`}}}
	})
	rt := newTestRuntime(t, srv, nil)
	st := cron.NewStore(rt.opts.Home, nil)
	if _, err := st.Add(cron.Job{Name: "bank", Schedule: "every 1h", Prompt: "alice's bank balance", Origin: "telegram:42"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Add(cron.Job{Name: "snoop", Schedule: "every 1h", Prompt: "list all cron jobs", Origin: "telegram:666"}); err != nil {
		t.Fatal(err)
	}
	j, err := st.Get("snoop")
	if err != nil {
		t.Fatal(err)
	}
	out, err := rt.RunCron(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "snoop") || strings.Contains(out, "bank") {
		t.Fatalf("the run of a telegram:666 job answered:\n%s", out)
	}
}
