package tool

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

func sessionSearchStore(t *testing.T) (store.Store, string, string) {
	t.Helper()
	// A clock one second per call: session b is newer than a whatever the
	// machine's speed (ties in updated_at were broken by the random ids).
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	st, err := store.Open(filepath.Join(t.TempDir(), store.FileName), store.WithClock(func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	mk := func(title string, msgs ...llm.Message) string {
		s, err := st.CreateSession(ctx, store.NewSession{Model: "test-model"})
		if err != nil {
			t.Fatal(err)
		}
		if title != "" {
			if err := st.SetTitle(ctx, s.ID, title); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range msgs {
			if _, err := st.AppendMessage(ctx, s.ID, m); err != nil {
				t.Fatal(err)
			}
		}
		return s.ID
	}
	a := mk("Nginx outage",
		llm.Message{Role: llm.RoleUser, Content: "nginx returns 502 after the certificate renewal"},
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "terminal", Arguments: `{"command":"journalctl -u nginx"}`}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "1", ToolName: "terminal", Content: "upstream certificate expired"},
		llm.Message{Role: llm.RoleAssistant, Content: "The upstream certificate expired; renew it with certbot."},
	)
	b := mk("", llm.Message{Role: llm.RoleUser, Content: "set up the postgres backup cron"})
	return st, a, b
}

func runSessionSearch(t *testing.T, tl Tool, args string) (Result, map[string]any) {
	t.Helper()
	res := tl.Run(context.Background(), Call{ID: "c", Args: json.RawMessage(args)})
	var out map[string]any
	if !res.IsError {
		if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
			t.Fatalf("result is not JSON: %v\n%s", err, res.Content)
		}
	}
	return res, out
}

func TestSessionSearchFindsSnippetsWithSessionTitleAndDate(t *testing.T) {
	st, a, _ := sessionSearchStore(t)
	tl := NewSessionSearch(st)
	if tl.Spec().Name != "session_search" || tl.Toolset() != "session_search" || !json.Valid(tl.Spec().Parameters) {
		t.Fatalf("spec = %+v", tl.Spec())
	}
	res, out := runSessionSearch(t, tl, `{"query":"certificate"}`)
	if res.IsError {
		t.Fatal(res.Content)
	}
	results := out["results"].([]any)
	// Default role_filter is user,assistant: the tool result is left out.
	if len(results) != 2 {
		t.Fatalf("results = %s", res.Content)
	}
	first := results[0].(map[string]any)
	if first["session_id"] != a || first["title"] != "Nginx outage" || !strings.HasPrefix(first["date"].(string), "20") ||
		!strings.Contains(first["snippet"].(string), "**certificate**") {
		t.Fatalf("first result = %v", first)
	}
	res, out = runSessionSearch(t, tl, `{"query":"certificate","role_filter":"tool","limit":3}`)
	if res.IsError || out["count"].(float64) != 1 {
		t.Fatalf("role_filter tool: %s", res.Content)
	}
	// Tool names and arguments are searchable.
	res, out = runSessionSearch(t, tl, `{"query":"journalctl","role_filter":["assistant"]}`)
	if res.IsError || out["count"].(float64) != 1 {
		t.Fatalf("tool argument search: %s", res.Content)
	}
	res, out = runSessionSearch(t, tl, `{"query":"renew*","sort":"newest","limit":1}`)
	if res.IsError || out["count"].(float64) != 1 {
		t.Fatalf("limit 1: %s", res.Content)
	}
	res, out = runSessionSearch(t, tl, `{"query":"kubernetes"}`)
	if res.IsError || out["count"].(float64) != 0 || out["note"] == nil {
		t.Fatalf("no-match result should say so: %s", res.Content)
	}
}

func TestSessionSearchReadsAndBrowsesSessions(t *testing.T) {
	st, a, b := sessionSearchStore(t)
	tl := NewSessionSearch(st)
	res, out := runSessionSearch(t, tl, `{"session_id":"Nginx outage"}`)
	if res.IsError {
		t.Fatal(res.Content)
	}
	msgs := out["messages"].([]any)
	if out["session_id"] != a || len(msgs) != 4 {
		t.Fatalf("read = %s", res.Content)
	}
	call := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(string)
	if !strings.HasPrefix(call, "terminal(") || !strings.Contains(call, "journalctl") {
		t.Fatalf("tool call shown as %q", call)
	}
	// Query plus session_id searches only that session.
	res, out = runSessionSearch(t, tl, `{"query":"backup","session_id":"`+a+`"}`)
	if res.IsError || out["count"].(float64) != 0 {
		t.Fatalf("scoped search = %s", res.Content)
	}
	res, out = runSessionSearch(t, tl, `{}`)
	if res.IsError {
		t.Fatal(res.Content)
	}
	recent := out["recent_sessions"].([]any)
	if len(recent) != 2 || recent[0].(map[string]any)["session_id"] != b ||
		recent[0].(map[string]any)["preview"] != "set up the postgres backup cron" {
		t.Fatalf("browse = %s", res.Content)
	}
}

func TestSessionSearchReportsBadArgumentsToTheModel(t *testing.T) {
	st, _, _ := sessionSearchStore(t)
	tl := NewSessionSearch(st)
	for args, want := range map[string]string{
		`{"query":"\"unterminated"}`:         "not valid FTS5 syntax",
		`{"query":"x","sort":"sideways"}`:    "sort",
		`{"query":"x","role_filter":"bots"}`: "role",
		`{"session_id":"nope"}`:              "no session matches",
		`{"query": 5}`:                       "invalid arguments",
	} {
		res, _ := runSessionSearch(t, tl, args)
		if !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("%s: result %+v, want an error mentioning %q", args, res, want)
		}
	}
	// Empty arguments mean {}: browse.
	if res, _ := runSessionSearch(t, tl, ``); res.IsError {
		t.Fatalf("empty args: %s", res.Content)
	}
}

func TestSessionSearchReadKeepsTheEndOfLongSessions(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	s, _ := st.CreateSession(ctx, store.NewSession{})
	for i := 0; i < 60; i++ {
		if _, err := st.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleUser, Content: strings.Repeat("y", 3000)}); err != nil {
			t.Fatal(err)
		}
	}
	res, out := runSessionSearch(t, NewSessionSearch(st), `{"session_id":"`+s.ID+`"}`)
	if res.IsError || out["omitted"] == nil {
		t.Fatalf("long session read: omitted missing")
	}
	msgs := out["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["seq"].(float64) != 60 || len(res.Content) > 40000 || !strings.Contains(last["content"].(string), "more characters") {
		t.Fatalf("kept %d messages, last seq %v, %d bytes", len(msgs), last["seq"], len(res.Content))
	}
}
