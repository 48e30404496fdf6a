package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

func checkSessionIDFromClockAndRandom(t *testing.T, tg *fixture) {
	fixed := func() time.Time { return time.Date(2026, 11, 30, 15, 55, 0, 0, time.FixedZone("CET", 3600)) }
	st := tg.openWith(t, store.WithClock(fixed), store.WithRandom(strings.NewReader("\xa1\xb2\xc3")))
	s, err := st.CreateSession(context.Background(), store.NewSession{Model: "m"})
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
		{Role: llm.RoleAssistant, Content: "It is an incident runbook.", FinishReason: "stop",
			Model: "deepseek-chat", Provider: "deepseek"},
	}
}

func checkAppendAndResumeKeepsOrderAndFields(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	s := mustCreate(t, st, store.NewSession{Source: "oneshot", Model: "anthropic/claude-sonnet-4.6", Provider: "openrouter",
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

	st = tg.open(t) // as a resuming process does
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

func checkAppendRejectsBadInputWithoutLosingHistory(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	s := mustCreate(t, st, store.NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleUser, Content: "keep me"})
	if _, err := st.AppendMessage(ctx, s.ID, llm.Message{Role: "robot", Content: "x"}); err == nil {
		t.Fatal("unknown role accepted")
	}
	if _, err := st.AppendMessage(ctx, s.ID, llm.Message{Role: llm.RoleAssistant, ReasoningDetails: json.RawMessage(`{bad`)}); err == nil {
		t.Fatal("invalid reasoning_details JSON accepted")
	}
	if _, err := st.AppendMessage(ctx, "20990101_000000_ffffff", llm.Message{Role: llm.RoleUser}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("append to missing session: %v, want store.ErrNotFound", err)
	}
	got, _ := st.Messages(ctx, s.ID)
	if len(got) != 1 || got[0].Content != "keep me" {
		t.Fatalf("history = %+v", got)
	}
}

func checkResolve(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	a := mustCreate(t, st, store.NewSession{})
	b := mustCreate(t, st, store.NewSession{})
	c := mustCreate(t, st, store.NewSession{})
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
	if _, err := st.Resolve(ctx, "nope*"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Resolve(nope*) = %v, want store.ErrNotFound", err)
	}
	if _, err := st.Resolve(ctx, "2027"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Resolve(2027) = %v, want store.ErrNotFound", err)
	}
	latest, err := st.Latest(ctx, "cron")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Latest(cron) = %+v, %v", latest, err)
	}
}

func checkTitlesAreUnique(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	a := mustCreate(t, st, store.NewSession{})
	b := mustCreate(t, st, store.NewSession{})
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
	if err := st.SetTitle(ctx, b.ID, strings.Repeat("x", store.MaxTitleLen+1)); err == nil {
		t.Fatal("over-long title accepted")
	}
	// Clearing frees the title; untitled sessions never clash.
	if err := st.SetTitle(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(ctx, b.ID, "Incident triage"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(ctx, "20990101_000000_000000", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetTitle on missing session = %v", err)
	}
}

func checkDeleteCascades(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	parent := mustCreate(t, st, store.NewSession{})
	child := mustCreate(t, st, store.NewSession{ParentSessionID: parent.ID})
	mustAppend(t, st, parent.ID, conversation()...)
	mustAppend(t, st, child.ID, llm.Message{Role: llm.RoleUser, Content: "child keeps runbook"})

	if err := st.Delete(ctx, parent.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Session(ctx, parent.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted session still there: %v", err)
	}
	if msgs, err := st.StoredMessages(ctx, parent.ID, true); !errors.Is(err, store.ErrNotFound) || len(msgs) != 0 {
		t.Fatalf("%d messages left (err %v)", len(msgs), err)
	}
	hits, err := st.Search(ctx, store.SearchOptions{Query: "runbook"})
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
	tg.check(t, st)
	if err := st.Delete(ctx, parent.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete = %v, want store.ErrNotFound", err)
	}
}

func checkArchiveMessagesForCompression(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	s := mustCreate(t, st, store.NewSession{})
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
	hits, err := st.Search(ctx, store.SearchOptions{Query: "kubernetes"})
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
	tg.check(t, st)
}

func checkUsageEndPromptMetadataAndList(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	a := mustCreate(t, st, store.NewSession{Source: "cron", Metadata: json.RawMessage(`{"task":"nightly"}`)})
	b := mustCreate(t, st, store.NewSession{})
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
	list, err := st.List(ctx, store.ListOptions{})
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if list[0].ID != a.ID || list[1].Preview != "what is this?" {
		t.Fatalf("List order/preview = %+v", list)
	}
	crons, _ := st.List(ctx, store.ListOptions{Source: "cron", Limit: 5})
	if len(crons) != 1 || crons[0].ID != a.ID {
		t.Fatalf("List(cron) = %+v", crons)
	}
}

func checkConcurrentWritersFromTwoConnections(t *testing.T, tg *fixture) {
	st1 := tg.open(t)
	st2 := tg.openWith(t)
	s := mustCreate(t, st1, store.NewSession{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, st := range []store.Store{st1, st2} {
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

// A title that looks like a session id would make `--resume REF` and
// `sessions rename` ambiguous (Resolve tries ids, then titles), so it is
// refused with an error that says why; nothing is changed.
func checkSetTitleRefusesIDLikeTitles(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	a := mustCreate(t, st, store.NewSession{})
	b := mustCreate(t, st, store.NewSession{})
	if err := st.SetTitle(ctx, b.ID, "kept"); err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{
		a.ID,                     // another session's id
		b.ID,                     // its own id
		strings.ToUpper(a.ID),    // ids resolve case-insensitively through titles
		"20991231_235959_abcdef", // the id shape, no such session
		"20991231_235959",        // an id prefix of that shape
		"20991231_235959_ab",
		" 20991231_235959_abcdef ", // cleaned first
	} {
		err := st.SetTitle(ctx, b.ID, title)
		if err == nil || !strings.Contains(err.Error(), "looks like a session id") {
			t.Errorf("SetTitle(%q) = %v, want a refusal", title, err)
		}
	}
	if got, _ := st.Session(ctx, b.ID); got.Title != "kept" {
		t.Fatalf("a refused title changed the session: %q", got.Title)
	}
	// Titles that merely contain digits or dates stay allowed.
	for _, title := range []string{"2026 planning", "20261130", "incident 20261130_145500", "release_2026_11"} {
		if err := st.SetTitle(ctx, b.ID, title); err != nil {
			t.Errorf("SetTitle(%q) = %v", title, err)
		}
	}
	if _, err := st.Import(ctx, []store.ImportedSession{{Title: a.ID}}); err == nil || !strings.Contains(err.Error(), "looks like a session id") {
		t.Errorf("Import with an id-like title = %v", err)
	}
}

// --resume takes a unique prefix of a title (case-insensitive); LIKE's
// wildcards in the reference are plain characters.
func checkResolveByTitlePrefix(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	a := mustCreate(t, st, store.NewSession{})
	b := mustCreate(t, st, store.NewSession{})
	if err := st.SetTitle(ctx, a.ID, "say hi to the team"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(ctx, b.ID, "50% done"); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Resolve(ctx, "Say hi"); err != nil || got.ID != a.ID {
		t.Errorf("Resolve(Say hi) = %v, %v; want %s", got.ID, err, a.ID)
	}
	if got, err := st.Resolve(ctx, "50%"); err != nil || got.ID != b.ID {
		t.Errorf("Resolve(50%%) = %v, %v", got.ID, err)
	}
	if _, err := st.Resolve(ctx, "%"); err == nil {
		t.Error("a bare % matched a title")
	}
}

// Regression (issue 8): a run killed in its first milliseconds left a
// session row without messages, and `-c` continued that empty session
// instead of the last real one. A deferred session has no row until its
// first message, which is stored in the same transaction.
func checkDeferredSessionWrittenWithFirstMessage(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	real := mustCreate(t, st, store.NewSession{})
	mustAppend(t, st, real.ID, llm.Message{Role: llm.RoleUser, Content: "real work"})

	rec := store.NewRecorder(st)
	id, err := st.NewSessionID()
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Defer(store.NewSession{ID: id, Source: "oneshot", SystemPrompt: "sys"}); err != nil {
		t.Fatal(err)
	}
	// Killed here: nothing was written.
	if _, err := st.Session(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deferred session exists before its first message: %v", err)
	}
	if latest, err := st.Latest(ctx, ""); err != nil || latest.ID != real.ID {
		t.Fatalf("Latest = %v, %v; want %s", latest.ID, err, real.ID)
	}
	if seq, err := rec.AppendMessage(ctx, id, llm.Message{Role: llm.RoleUser, Content: "hello"}); err != nil || seq != 1 {
		t.Fatalf("first append: %d, %v", seq, err)
	}
	if _, err := rec.AppendMessage(ctx, id, llm.Message{Role: llm.RoleAssistant, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	s, err := st.Session(ctx, id)
	if err != nil || s.SystemPrompt != "sys" || s.Source != "oneshot" || s.MessageCount != 2 {
		t.Fatalf("stored session = %+v, %v", s, err)
	}
	if rec.Pending(id) {
		t.Fatal("still pending after its first message")
	}
}

// Empty sessions (from older builds) are skipped by Latest and pruned once
// old, unless a run holds their lock.
func checkEmptySessionsSkippedAndPruned(t *testing.T, tg *fixture) {
	st := tg.open(t) // the test clock advances 1 s per reading
	ctx := context.Background()
	real := mustCreate(t, st, store.NewSession{})
	mustAppend(t, st, real.ID, llm.Message{Role: llm.RoleUser, Content: "real work"})
	empty := mustCreate(t, st, store.NewSession{})
	locked := mustCreate(t, st, store.NewSession{})
	if latest, err := st.Latest(ctx, ""); err != nil || latest.ID != real.ID {
		t.Fatalf("Latest = %v, %v; want the non-empty %s, not %s", latest.ID, err, real.ID, empty.ID)
	}
	if latest, err := st.Resolve(ctx, "latest"); err != nil || latest.ID != real.ID {
		t.Fatalf(`Resolve("latest") = %v, %v`, latest.ID, err)
	}
	unlock, err := st.LockSession(ctx, locked.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if n, err := st.PruneEmpty(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("young empties pruned: %d, %v", n, err)
	}
	if n, err := st.PruneEmpty(ctx, 0); err != nil || n != 1 {
		t.Fatalf("PruneEmpty = %d, %v; want the one unlocked empty session", n, err)
	}
	for id, want := range map[string]bool{real.ID: true, empty.ID: false, locked.ID: true} {
		if _, err := st.Session(ctx, id); (err == nil) != want {
			t.Errorf("session %s exists = %v, want %v", id, err == nil, want)
		}
	}
}

// Image parts round-trip through the store byte for byte.
func checkPartsRoundTrip(t *testing.T, tg *fixture) {
	st := tg.open(t)
	s := mustCreate(t, st, store.NewSession{Source: "cli"})
	img := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 255}
	m := llm.Message{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "browser_vision", Content: "Screenshot attached.",
		Parts: []llm.Part{llm.ImagePart("image/png", img), {Type: llm.PartText, Text: "caption"}}}
	if _, err := st.AppendMessage(context.Background(), s.ID, m); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Messages(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || !reflect.DeepEqual(msgs[0], m) {
		t.Errorf("read back %+v, want %+v", msgs, m)
	}
}

// Forget drops a deferred session that never wrote anything (a gateway
// visitor who said nothing), and the session is not written afterwards.
func checkRecorderForgetDropsDeferredSession(t *testing.T, tg *fixture) {
	st := tg.open(t)
	rec := store.NewRecorder(st)
	id, err := st.NewSessionID()
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Defer(store.NewSession{ID: id}); err != nil {
		t.Fatal(err)
	}
	rec.Forget(id)
	if rec.Pending(id) {
		t.Fatalf("session %s still pending after Forget", id)
	}
	if _, err := st.Session(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("forgotten session was written: %v", err)
	}
}

func checkReplaceActiveArchivesOnlyTheMiddle(t *testing.T, tg *fixture) {
	ctx := context.Background()
	st := tg.openWith(t)
	sess, err := st.CreateSession(ctx, store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	var h []llm.Message
	for i, c := range []string{"first question", "first answer", "middle zebra one", "middle zebra two", "last question", "last answer"} {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		m := llm.Message{Role: role, Content: c}
		h = append(h, m)
		if _, err := st.AppendMessage(ctx, sess.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	summary := llm.Message{Role: llm.RoleUser, Content: "[summary] zebras were discussed"}
	compacted := append(append(append([]llm.Message{}, h[:2]...), summary), h[4:]...)
	if err := st.ReplaceActive(ctx, sess.ID, compacted); err != nil {
		t.Fatal(err)
	}
	got, err := st.Messages(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(compacted) {
		t.Fatalf("active conversation has %d messages, want %d: %+v", len(got), len(compacted), got)
	}
	for i := range got {
		if !store.SameMessage(got[i], compacted[i]) {
			t.Errorf("message %d = %q, want %q", i, got[i].Content, compacted[i].Content)
		}
	}
	all, err := st.StoredMessages(ctx, sess.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	// 6 originals (2 archived) + 1 summary: the kept messages are not copied.
	if len(all) != 7 {
		t.Errorf("stored rows = %d, want 7 (no duplicated kept messages)", len(all))
	}
	// Archived messages stay searchable, and each appears once.
	hits, err := st.Search(ctx, store.SearchOptions{Query: "zebra", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, hit := range hits {
		seen[hit.Snippet]++
	}
	for s, n := range seen {
		if n > 1 {
			t.Errorf("hit %q returned %d times", s, n)
		}
	}
	if len(hits) < 2 {
		t.Errorf("archived middle should stay searchable; got %d hits", len(hits))
	}
}

// ReplaceTitle changes a title only while it is still the one read: a
// title set meanwhile wins; a title another session holds is refused.
func checkReplaceTitleOnlyWhileUnchanged(t *testing.T, tg *fixture) {
	st := tg.open(t)
	ctx := context.Background()
	a := mustCreate(t, st, store.NewSession{})
	b := mustCreate(t, st, store.NewSession{})
	if err := st.SetTitle(ctx, a.ID, "first prompt line"); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.ReplaceTitle(ctx, a.ID, "first prompt line", "Model title"); !ok || err != nil {
		t.Fatalf("ReplaceTitle over the fallback = %v, %v", ok, err)
	}
	if ok, err := st.ReplaceTitle(ctx, a.ID, "first prompt line", "Stale title"); ok || err != nil {
		t.Fatalf("ReplaceTitle over a changed title = %v, %v; want false", ok, err)
	}
	if got, _ := st.Session(ctx, a.ID); got.Title != "Model title" {
		t.Fatalf("title = %q", got.Title)
	}
	if err := st.SetTitle(ctx, b.ID, "b title"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReplaceTitle(ctx, b.ID, "b title", "model TITLE"); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("ReplaceTitle to a taken title = %v", err)
	}
}
