package store

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// testClock is a clock that moves one second forward on every reading.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func openTestStore(t *testing.T, path string) *SQLite {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), FileName)
	}
	clock := &testClock{t: time.Date(2026, 11, 30, 14, 55, 0, 0, time.UTC)}
	st, err := Open(path, WithClock(clock.Now), WithRandom(rand.NewChaCha8([32]byte{1})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func mustCreate(t *testing.T, st *SQLite, ns NewSession) Session {
	t.Helper()
	s, err := st.CreateSession(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAppend(t *testing.T, st *SQLite, id string, msgs ...llm.Message) {
	t.Helper()
	for _, m := range msgs {
		if _, err := st.AppendMessage(context.Background(), id, m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSessionIDFromClockAndRandom(t *testing.T) {
	fixed := func() time.Time { return time.Date(2026, 11, 30, 15, 55, 0, 0, time.FixedZone("CET", 3600)) }
	st, err := Open(filepath.Join(t.TempDir(), FileName), WithClock(fixed),
		WithRandom(strings.NewReader("\xa1\xb2\xc3")))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.CreateSession(context.Background(), NewSession{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "20261130_145500_a1b2c3" {
		t.Fatalf("id = %q, want 20261130_145500_a1b2c3 (UTC time + random hex)", s.ID)
	}
	if s.Source != "cli" || s.StartedAt != fixed().UTC() {
		t.Fatalf("session = %+v", s)
	}
}

func conversation() []llm.Message {
	return []llm.Message{
		{Role: llm.RoleUser, Content: "Inspect the workspace & summarize <it>"},
		{Role: llm.RoleAssistant, Content: "Looking.", Reasoning: "need to list files",
			ReasoningSignature: "sig==", ReasoningDetails: json.RawMessage(`[{"type":"reasoning.text","text":"x"}]`),
			RedactedThinking: []string{"opaque"},
			ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "terminal", Arguments: `{"command":"ls -la && cat <README.md>"}`},
				{ID: "call_2", Name: "read_file", Arguments: `{"path":"runbook.md"}`},
			}, FinishReason: "tool_calls"},
		{Role: llm.RoleTool, ToolCallID: "call_1", ToolName: "terminal", Content: "README.md\nrunbook.md"},
		{Role: llm.RoleTool, ToolCallID: "call_2", ToolName: "read_file", Content: "no such file", IsError: true},
		{Role: llm.RoleAssistant, Content: "It is an incident runbook.", FinishReason: "stop"},
	}
}

func TestAppendAndResumeKeepsOrderAndFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st := openTestStore(t, path)
	ctx := context.Background()
	s := mustCreate(t, st, NewSession{Source: "oneshot", Model: "anthropic/claude-sonnet-4.6", Provider: "openrouter",
		Cwd: "/work", SystemPrompt: "You are Hermes Agent."})
	if !regexp.MustCompile(`^\d{8}_\d{6}_[0-9a-f]{6}$`).MatchString(s.ID) {
		t.Fatalf("id %q does not look like 20261130_145500_a1b2c3", s.ID)
	}
	want := conversation()
	for i, m := range want {
		seq, err := st.AppendMessage(ctx, s.ID, m)
		if err != nil {
			t.Fatal(err)
		}
		if seq != int64(i+1) {
			t.Fatalf("seq = %d, want %d", seq, i+1)
		}
	}
	if err := st.AddUsage(ctx, s.ID, llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 5, ReasoningTokens: 3}, 2); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st = openTestStore(t, path)
	got, err := st.Messages(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed history differs:\n got %+v\nwant %+v", got, want)
	}
	back, err := st.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if back.MessageCount != 5 || back.ToolCallCount != 2 || back.APICallCount != 2 ||
		back.Usage != (llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 5, ReasoningTokens: 3}) ||
		back.SystemPrompt != "You are Hermes Agent." || back.Cwd != "/work" || back.Source != "oneshot" ||
		!back.UpdatedAt.After(back.StartedAt) {
		t.Fatalf("session after resume = %+v", back)
	}
}

func TestAppendRejectsBadInputWithoutLosingHistory(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	s := mustCreate(t, st, NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleUser, Content: "keep me"})
	if _, err := st.AppendMessage(ctx, s.ID, llm.Message{Role: "robot", Content: "x"}); err == nil {
		t.Fatal("unknown role accepted")
	}
	if _, err := st.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleAssistant, ReasoningDetails: json.RawMessage(`{bad`)}); err == nil {
		t.Fatal("invalid reasoning_details JSON accepted")
	}
	if _, err := st.AppendMessage(ctx, "20990101_000000_ffffff", llm.Message{Role: llm.RoleUser}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("append to missing session: %v, want ErrNotFound", err)
	}
	got, _ := st.Messages(ctx, s.ID)
	if len(got) != 1 || got[0].Content != "keep me" {
		t.Fatalf("history = %+v", got)
	}
}

func TestResolve(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	a := mustCreate(t, st, NewSession{})
	b := mustCreate(t, st, NewSession{})
	c := mustCreate(t, st, NewSession{})
	if err := st.SetTitle(ctx, b.ID, "Deploy fix"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, a.ID, llm.Message{Role: llm.RoleUser, Content: "latest activity"})

	for ref, want := range map[string]string{
		a.ID: a.ID, c.ID[:len(c.ID)-2]: c.ID, "deploy FIX": b.ID, "latest": a.ID, " " + b.ID + " ": b.ID,
	} {
		got, err := st.Resolve(ctx, ref)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", ref, err)
		}
		if got.ID != want {
			t.Fatalf("Resolve(%q) = %s, want %s", ref, got.ID, want)
		}
	}
	// All three share the date prefix.
	_, err := st.Resolve(ctx, "20261130")
	if err == nil || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), a.ID) ||
		!strings.Contains(err.Error(), b.ID) || !strings.Contains(err.Error(), `"Deploy fix"`) {
		t.Fatalf("ambiguous prefix error = %v", err)
	}
	if _, err := st.Resolve(ctx, "nope*"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve(nope*) = %v, want ErrNotFound", err)
	}
	if _, err := st.Resolve(ctx, "2027"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve(2027) = %v, want ErrNotFound", err)
	}
	latest, err := st.Latest(ctx, "cron")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Latest(cron) = %+v, %v", latest, err)
	}
}

func TestTitlesAreUnique(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	a := mustCreate(t, st, NewSession{})
	b := mustCreate(t, st, NewSession{})
	if err := st.SetTitle(ctx, a.ID, "  Incident\ttriage \n"); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Session(ctx, a.ID)
	if got.Title != "Incident triage" {
		t.Fatalf("title = %q, want cleaned %q", got.Title, "Incident triage")
	}
	err := st.SetTitle(ctx, b.ID, "incident TRIAGE")
	if err == nil || !strings.Contains(err.Error(), "already used by session "+a.ID) {
		t.Fatalf("clash error = %v", err)
	}
	if err := st.SetTitle(ctx, b.ID, strings.Repeat("x", MaxTitleLen+1)); err == nil {
		t.Fatal("over-long title accepted")
	}
	// Clearing frees the title; untitled sessions never clash.
	if err := st.SetTitle(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(ctx, b.ID, "Incident triage"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(ctx, "20990101_000000_000000", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetTitle on missing session = %v", err)
	}
}

func TestDeleteCascades(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	parent := mustCreate(t, st, NewSession{})
	child := mustCreate(t, st, NewSession{ParentSessionID: parent.ID})
	mustAppend(t, st, parent.ID, conversation()...)
	mustAppend(t, st, child.ID, llm.Message{Role: llm.RoleUser, Content: "child keeps runbook"})

	if err := st.Delete(ctx, parent.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Session(ctx, parent.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted session still there: %v", err)
	}
	var n int
	if err := st.db.QueryRow("SELECT count(*) FROM messages WHERE session_id = ?", parent.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d messages left (err %v)", n, err)
	}
	hits, err := st.Search(ctx, SearchOptions{Query: "runbook"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].SessionID != child.ID {
		t.Fatalf("search after delete = %+v, want only the child's message", hits)
	}
	c, _ := st.Session(ctx, child.ID)
	if c.ParentSessionID != "" {
		t.Fatalf("child parent = %q, want cleared", c.ParentSessionID)
	}
	if err := st.CheckIntegrity(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, parent.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete = %v, want ErrNotFound", err)
	}
}

func TestArchiveMessagesForCompression(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	s := mustCreate(t, st, NewSession{})
	for _, c := range []string{"one", "two", "three kubernetes", "four", "five", "six"} {
		mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleUser, Content: c})
	}
	summary := llm.Message{Role: llm.RoleUser, Content: "[summary of two..four]"}
	seq, err := st.ArchiveMessages(ctx, s.ID, 2, 4, summary)
	if err != nil || seq != 2 {
		t.Fatalf("ArchiveMessages = %d, %v", seq, err)
	}
	contents := func() []string {
		msgs, err := st.Messages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
		}
		return out
	}
	if got := contents(); !reflect.DeepEqual(got, []string{"one", "[summary of two..four]", "five", "six"}) {
		t.Fatalf("active history = %q", got)
	}
	// Archived rows stay searchable, flagged inactive.
	hits, err := st.Search(ctx, SearchOptions{Query: "kubernetes"})
	if err != nil || len(hits) != 1 || hits[0].Active || hits[0].Seq != 3 {
		t.Fatalf("search archived = %+v, %v", hits, err)
	}
	if seq, _ := st.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleUser, Content: "seven"}); seq != 7 {
		t.Fatalf("seq after archive = %d, want 7", seq)
	}
	// A second compression may swallow the first summary.
	if _, err := st.ArchiveMessages(ctx, s.ID, 1, 5, llm.Message{Role: llm.RoleUser, Content: "[summary 2]"}); err != nil {
		t.Fatal(err)
	}
	if got := contents(); !reflect.DeepEqual(got, []string{"[summary 2]", "six", "seven"}) {
		t.Fatalf("active history after second compression = %q", got)
	}
	all, _ := st.StoredMessages(ctx, s.ID, true)
	if len(all) != 9 {
		t.Fatalf("stored rows = %d, want 9 (7 appended + 2 summaries)", len(all))
	}
	if _, err := st.ArchiveMessages(ctx, s.ID, 100, 200, summary); err == nil {
		t.Fatal("archiving an empty range succeeded")
	}
	if err := st.CheckIntegrity(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestUsageEndPromptMetadataAndList(t *testing.T) {
	st := openTestStore(t, "")
	ctx := context.Background()
	a := mustCreate(t, st, NewSession{Source: "cron", Metadata: json.RawMessage(`{"task":"nightly"}`)})
	b := mustCreate(t, st, NewSession{})
	mustAppend(t, st, b.ID, llm.Message{Role: llm.RoleUser, Content: "  what\nis   this?  "})
	if err := st.EndSession(ctx, a.ID, "completed"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetSystemPrompt(ctx, a.ID, "prompt v1"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetMetadata(ctx, a.ID, json.RawMessage(`{"box":{"id":"box-1"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.SetMetadata(ctx, a.ID, json.RawMessage(`[1]`)); err == nil {
		t.Fatal("non-object metadata accepted")
	}
	got, _ := st.Session(ctx, a.ID)
	if got.EndReason != "completed" || got.EndedAt.IsZero() || got.SystemPrompt != "prompt v1" {
		t.Fatalf("session = %+v", got)
	}
	var meta map[string]any
	if err := json.Unmarshal(got.Metadata, &meta); err != nil || meta["task"] != "nightly" || meta["box"] == nil {
		t.Fatalf("metadata = %s (%v)", got.Metadata, err)
	}
	list, err := st.List(ctx, ListOptions{})
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if list[0].ID != a.ID || list[1].Preview != "what is this?" {
		t.Fatalf("List order/preview = %+v", list)
	}
	crons, _ := st.List(ctx, ListOptions{Source: "cron", Limit: 5})
	if len(crons) != 1 || crons[0].ID != a.ID {
		t.Fatalf("List(cron) = %+v", crons)
	}
}

func TestConcurrentWritersFromTwoConnections(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	st1 := openTestStore(t, path)
	st2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	s := mustCreate(t, st1, NewSession{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, st := range []*SQLite{st1, st2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				if _, err := st.AppendMessage(context.Background(), s.ID, llm.Message{Role: llm.RoleUser, Content: "x"}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, _ := st1.StoredMessages(context.Background(), s.ID, true)
	if len(all) != 80 {
		t.Fatalf("%d messages, want 80", len(all))
	}
	for i, m := range all {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not sqlite ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(junk); err == nil || !strings.Contains(err.Error(), junk) || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("Open(junk) = %v", err)
	}
	newer := filepath.Join(dir, FileName)
	st := openTestStore(t, newer)
	if _, err := st.db.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := Open(newer); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open(newer schema) = %v", err)
	}
}

func TestDatabaseFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "my home #1 %20", FileName)
	st := openTestStore(t, path)
	mustCreate(t, st, NewSession{})
	for _, p := range []string{path, path + "-wal", filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s mode %v is readable by others", p, fi.Mode().Perm())
		}
	}
}

// The store never receives credentials, and the schema has nowhere to put
// request headers or keys should a caller try.
func TestSchemaHasNoPlaceForSecrets(t *testing.T) {
	st := openTestStore(t, "")
	forbidden := regexp.MustCompile(`(?i)header|authori[sz]ation|api_?key|secret|password|passwd|credential|bearer|cookie|auth_token|access_token|refresh_token`)
	rows, err := st.db.Query(`SELECT m.name, p.name FROM sqlite_schema AS m, pragma_table_info(m.name) AS p
		WHERE m.type IN ('table', 'view')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	columns := 0
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		columns++
		if forbidden.MatchString(table) || forbidden.MatchString(column) {
			t.Errorf("%s.%s looks like it stores credentials or request headers", table, column)
		}
	}
	if columns < 30 {
		t.Fatalf("only %d columns inspected; the schema query is broken", columns)
	}
}
