package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
)

func cronCall(t *testing.T, tl Tool, session, args string) (map[string]any, Result) {
	t.Helper()
	r := tl.Run(context.Background(), Call{ID: "c", SessionID: session, Args: json.RawMessage(args)})
	var m map[string]any
	if !r.IsError {
		if err := json.Unmarshal([]byte(r.Content), &m); err != nil {
			t.Fatalf("result is not JSON: %v\n%s", err, r.Content)
		}
	}
	return m, r
}

func TestCronjobToolLifecycle(t *testing.T) {
	now := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	st := cron.NewStore(t.TempDir(), func() time.Time { return now })
	tl := NewCronjob(CronjobOptions{
		Store: st, Now: func() time.Time { return now },
		Origin: func(id string) string {
			if id == "tg-session" {
				return "telegram:42"
			}
			return ""
		},
		InCron: func(id string) bool { return id == "cron-session" },
	})
	m, r := cronCall(t, tl, "tg-session", `{"action":"create","schedule":"every 2h","prompt":"check the build","name":"build","skills":["ci"]}`)
	if r.IsError {
		t.Fatal(r.Content)
	}
	created := m["created"].(map[string]any)
	if created["deliver"] != "origin" || created["next_run_at"] != "2026-05-01T10:00:00Z" {
		t.Fatalf("created %v: want deliver origin (made in a chat), next run in 2h", created)
	}
	j, err := st.Get("build")
	if err != nil || j.Origin != "telegram:42" || len(j.Skills) != 1 {
		t.Fatalf("stored job %+v %v", j, err)
	}

	if _, r := cronCall(t, tl, "cli-session", `{"action":"create","schedule":"every 2h","prompt":"x","deliver":"origin"}`); !r.IsError {
		t.Error("deliver origin without a chat was accepted")
	}
	if _, r := cronCall(t, tl, "cli-session", `{"action":"create","schedule":"every 2 fortnights","prompt":"x"}`); !r.IsError ||
		!strings.Contains(r.Content, "every 2 fortnights") {
		t.Errorf("bad schedule: %+v", r)
	}
	if _, r := cronCall(t, tl, "cron-session", `{"action":"create","schedule":"every 2h","prompt":"x"}`); !r.IsError {
		t.Error("a cron run scheduled a job")
	}

	cronCall(t, tl, "tg-session", `{"action":"pause","job_id":"build"}`)
	if j, _ := st.Get("build"); !j.Paused {
		t.Error("pause did not pause")
	}
	m, r = cronCall(t, tl, "tg-session", `{"action":"update","job_id":"build","schedule":"0 9 * * 1"}`)
	if r.IsError || m["job"].(map[string]any)["schedule"] != "0 9 * * 1" {
		t.Fatalf("update: %+v", r)
	}
	cronCall(t, tl, "tg-session", `{"action":"resume","job_id":"build"}`)
	cronCall(t, tl, "tg-session", `{"action":"run","job_id":"build"}`)
	if j, _ := st.Get("build"); j.Paused || !j.NextRunAt.Equal(now) {
		t.Errorf("after resume+run: %+v, want due now", j)
	}
	m, _ = cronCall(t, tl, "cron-session", `{"action":"list"}`)
	if jobs := m["jobs"].([]any); len(jobs) != 1 {
		t.Fatalf("list: %v", m)
	}
	if _, r := cronCall(t, tl, "tg-session", `{"action":"remove","job_id":"build"}`); r.IsError {
		t.Fatal(r.Content)
	}
	if _, r := cronCall(t, tl, "tg-session", `{"action":"remove","job_id":"build"}`); !r.IsError {
		t.Error("removing a removed job succeeded")
	}
	if _, ok := NewRegistry(tl).Get("cronjob_manage"); !ok {
		t.Error("the Hermes name cronjob_manage does not resolve")
	}
}

// A chat's model (steered by its user, or by a page it read) cannot post
// into another chat, nor read or change the jobs made from other chats;
// the operator's sessions (no origin) still manage every job.
func TestCronjobToolScopedToItsChat(t *testing.T) {
	now := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	st := cron.NewStore(t.TempDir(), func() time.Time { return now })
	origins := map[string]string{"alice": "telegram:42", "mallory": "telegram:666"}
	tl := NewCronjob(CronjobOptions{Store: st, Now: func() time.Time { return now },
		Origin: func(id string) string { return origins[id] }})
	if _, r := cronCall(t, tl, "alice", `{"action":"create","schedule":"every 2h","prompt":"my bank balance","name":"bank"}`); r.IsError {
		t.Fatal(r.Content)
	}
	for _, target := range []string{"telegram:42", "discord:42", "slack:C1", "telegram:4"} {
		_, r := cronCall(t, tl, "mallory", `{"action":"create","schedule":"every 2h","prompt":"x","deliver":"`+target+`"}`)
		if !r.IsError {
			t.Errorf("a job of chat telegram:666 delivers to %s", target)
		}
	}
	if _, r := cronCall(t, tl, "mallory", `{"action":"create","schedule":"every 2h","prompt":"x","name":"mine","deliver":"telegram:666:7"}`); r.IsError {
		t.Errorf("a job delivering to a thread of its own chat was refused: %s", r.Content)
	}
	m, _ := cronCall(t, tl, "mallory", `{"action":"list"}`)
	if jobs := m["jobs"].([]any); len(jobs) != 1 || strings.Contains(fmt.Sprint(jobs), "bank") {
		t.Errorf("mallory lists %v: want only her own job", jobs)
	}
	for _, args := range []string{
		`{"action":"update","job_id":"bank","deliver":"origin","prompt":"leak"}`,
		`{"action":"pause","job_id":"bank"}`, `{"action":"run","job_id":"bank"}`, `{"action":"remove","job_id":"bank"}`,
	} {
		if _, r := cronCall(t, tl, "mallory", args); !r.IsError || strings.Contains(r.Content, "my bank") {
			t.Errorf("mallory %s on alice's job: %+v", args, r)
		}
	}
	if j, err := st.Get("bank"); err != nil || j.Prompt != "my bank balance" || j.Paused || j.Origin != "telegram:42" {
		t.Fatalf("alice's job after mallory: %+v %v", j, err)
	}
	if _, r := cronCall(t, tl, "alice", `{"action":"update","job_id":"bank","deliver":"telegram:666"}`); !r.IsError {
		t.Error("alice's job was redirected to another chat")
	}
	m, _ = cronCall(t, tl, "operator", `{"action":"list"}`)
	if jobs := m["jobs"].([]any); len(jobs) != 2 {
		t.Errorf("the operator lists %d jobs, want 2", len(jobs))
	}
	if _, r := cronCall(t, tl, "operator", `{"action":"update","job_id":"bank","deliver":"telegram:7"}`); r.IsError {
		t.Errorf("the operator could not redirect a job: %s", r.Content)
	}
}
