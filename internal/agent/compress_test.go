package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"
)

// storeRewriter persists compacted histories in the real session store.
type storeRewriter struct{ st store.Store }

func (w storeRewriter) RewriteHistory(ctx context.Context, sessionID string, msgs []llm.Message) error {
	return w.st.ReplaceActive(ctx, sessionID, msgs)
}

// testClock is a settable clock for cooldowns.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// longHistory is a stored conversation of 9 messages whose middle is easy to
// recognise, with tool calls right at the cut points of first 2 / last 3.
func longHistory(t *testing.T, st store.Store, sid string) []llm.Message {
	t.Helper()
	pad := strings.Repeat("lorem ipsum ", 60)
	h := []llm.Message{
		{Role: llm.RoleUser, Content: "HEAD-0 please audit the payments service " + pad},
		{Role: llm.RoleAssistant, Content: "HEAD-1", ToolCalls: []llm.ToolCall{{ID: "t1", Name: "terminal", Arguments: `{"command":"ls"}`}}},
		{Role: llm.RoleTool, ToolCallID: "t1", ToolName: "terminal", Content: "HEAD-2 result " + pad},
		{Role: llm.RoleAssistant, Content: "MIDDLE-3 found the config " + pad},
		{Role: llm.RoleUser, Content: "MIDDLE-4 check the latency too " + pad},
		{Role: llm.RoleAssistant, Content: "TAIL-5", ToolCalls: []llm.ToolCall{
			{ID: "t2", Name: "read_file", Arguments: `{"path":"a"}`}, {ID: "t3", Name: "read_file", Arguments: `{"path":"b"}`}}},
		{Role: llm.RoleTool, ToolCallID: "t2", ToolName: "read_file", Content: "TAIL-6 " + pad},
		{Role: llm.RoleTool, ToolCallID: "t3", ToolName: "read_file", Content: "TAIL-7 " + pad},
		{Role: llm.RoleAssistant, Content: "TAIL-8 latency is 1700 ms"},
	}
	for _, m := range h {
		if _, err := st.AppendMessage(context.Background(), sid, m); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// marker returns the HEAD-/MIDDLE-/TAIL- tag a message starts with, or its role.
func marker(content, role string) string {
	if strings.HasPrefix(content, "[Summary of the earlier part") {
		return "summary"
	}
	if f := strings.Fields(content); len(f) > 0 && strings.ContainsAny(f[0], "-") {
		return f[0]
	}
	return role
}

func isSummaryRequest(r wireRequest) bool {
	return len(r.Messages) > 0 && r.Messages[0].Role == "system" && strings.HasPrefix(r.Messages[0].Text(), "You compress")
}

// Over the threshold, the middle of the history is replaced by the model's
// summary; the first and last messages stay, the tool call at each cut stays
// with its results, the todo list is re-injected, and the store holds the
// compacted history.
func TestCompressionReplacesMiddleWithSummary(t *testing.T) {
	st, sid := openStore(t)
	history := longHistory(t, st, sid)
	todo := tool.NewTodoList()
	if r := todo.Run(context.Background(), tool.Call{SessionID: sid, Args: []byte(
		`{"todos":[{"id":"1","content":"check payments latency","status":"in_progress"},{"id":"2","content":"old","status":"completed"}]}`)}); r.IsError {
		t.Fatal(r.Content)
	}
	srv, prov := newFakeModel(t,
		llmtest.Turn{Text: "## Goal\naudit payments\n## Key facts\nconfig found"},
		llmtest.Turn{Text: "continuing"},
	)
	log := &eventLog{}
	comp := NewCompressor(CompressorOptions{
		Provider: prov, Model: "fake", ContextWindow: 1000, Threshold: 0.5, ProtectFirstN: 2, ProtectLastN: 3,
		Pending: todo.Pending, Rewriter: storeRewriter{st}, Notice: func(s string) { log.add(Event{Kind: EventNotice, Text: s}) },
	})
	a := New(Options{Provider: prov, Model: "fake", Recorder: st, Compactor: comp, OnEvent: log.add})
	s := &Session{ID: sid, System: "SYSTEM PROMPT", History: history}
	res, err := a.RunTurn(context.Background(), s, "TAIL-9 continue")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "continuing" {
		t.Fatalf("res = %+v", res)
	}
	reqs := requests(t, srv)
	if len(reqs) != 2 || !isSummaryRequest(reqs[0]) {
		t.Fatalf("want a summary request then the turn's request, got %d requests", len(reqs))
	}
	if len(reqs[0].Tools) != 0 {
		t.Fatal("the summary call must not offer tools")
	}
	excerpt := reqs[0].Messages[1].Text()
	for _, want := range []string{"MIDDLE-3", "MIDDLE-4"} {
		if !strings.Contains(excerpt, want) {
			t.Errorf("summary request lacks %s", want)
		}
	}
	for _, kept := range []string{"HEAD-0", "TAIL-5", "TAIL-8"} {
		if strings.Contains(excerpt, kept) {
			t.Errorf("summary request contains protected message %s", kept)
		}
	}
	var shape []string
	for _, m := range reqs[1].Messages {
		shape = append(shape, marker(m.Text(), m.Role))
	}
	// The head grows to keep t1's result with its call; the tail grows to
	// keep t2/t3's call with its results.
	want := "[system HEAD-0 HEAD-1 HEAD-2 summary TAIL-5 TAIL-6 TAIL-7 TAIL-8 TAIL-9]"
	if fmt.Sprint(shape) != want {
		t.Fatalf("messages after compression:\n got %v\nwant %s", shape, want)
	}
	if reqs[1].Messages[0].Text() != "SYSTEM PROMPT" {
		t.Fatal("the system prompt changed")
	}
	summary := reqs[1].Messages[4].Text()
	for _, want := range []string{"audit payments", "config found", "[in_progress] 1: check payments latency"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary message lacks %q:\n%s", want, summary)
		}
	}
	if strings.Contains(summary, "old") {
		t.Errorf("completed todo re-injected:\n%s", summary)
	}
	stored, err := st.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(s.History) || len(stored) != 10 {
		t.Fatalf("store holds %d active messages, session %d, want 10", len(stored), len(s.History))
	}
	if ns := log.notices(); len(ns) != 1 || !strings.Contains(ns[0], "compressing context") {
		t.Fatalf("notices = %q", ns)
	}
}

// When the summary call fails, the history stays as it was, the person is
// told once, and no second attempt is made inside the cooldown; after the
// cooldown compression is tried again.
func TestCompressionFailureKeepsHistoryAndBacksOff(t *testing.T) {
	st, sid := openStore(t)
	history := longHistory(t, st, sid)
	echo := &funcTool{name: "echo", run: func(ctx context.Context, call tool.Call) tool.Result { return tool.Result{Content: "ok"} }}
	srv, prov := newFakeModel(t,
		llmtest.Turn{Status: 500, Error: "summariser is down"},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "echo", Args: `{}`}}},
		llmtest.Turn{Text: "done without compression"},
	)
	clock := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	log := &eventLog{}
	comp := NewCompressor(CompressorOptions{
		Provider: prov, Model: "fake", ContextWindow: 1000, ProtectFirstN: 2, ProtectLastN: 3,
		Rewriter: storeRewriter{st}, Notice: func(s string) { log.add(Event{Kind: EventNotice, Text: s}) }, Now: clock.Now,
	})
	a := New(Options{Provider: prov, Model: "fake", Recorder: st, Compactor: comp, OnEvent: log.add, Tools: tool.NewRegistry(echo)})
	s := &Session{ID: sid, System: "SYS", History: history}
	res, err := a.RunTurn(context.Background(), s, "go on")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "done without compression" {
		t.Fatalf("res = %+v", res)
	}
	reqs := requests(t, srv)
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3: one failed summary, then two turn calls without a retry", len(reqs))
	}
	if !isSummaryRequest(reqs[0]) || isSummaryRequest(reqs[1]) || isSummaryRequest(reqs[2]) {
		t.Fatal("only the first request may be a summary request")
	}
	if n := len(reqs[1].Messages); n != 1+len(history)+1 {
		t.Fatalf("the turn's request has %d messages, want the full history (%d)", n, 1+len(history)+1)
	}
	if !strings.HasPrefix(s.History[0].Content, "HEAD-0") || !strings.HasPrefix(s.History[3].Content, "MIDDLE-3") {
		t.Fatal("the history was changed after a failed summary")
	}
	var failures []string
	for _, n := range log.notices() {
		if strings.Contains(n, "failed") {
			failures = append(failures, n)
		}
	}
	if len(failures) != 1 || !strings.Contains(failures[0], "summariser is down") || !strings.Contains(failures[0], "history kept") {
		t.Fatalf("failure notices = %q, want exactly one naming the cause", failures)
	}
	stored, _ := st.Messages(context.Background(), sid)
	if len(stored) != len(s.History) {
		t.Fatalf("store has %d messages, session %d", len(stored), len(s.History))
	}

	// Past the cooldown the next turn compresses.
	clock.Advance(61 * time.Second)
	srv.Add(llmtest.Turn{Text: "## Goal\nsummary"}, llmtest.Turn{Text: "compressed now"})
	res, err = a.RunTurn(context.Background(), s, "again")
	if err != nil || res.Text != "compressed now" {
		t.Fatalf("after cooldown: %+v, %v", res, err)
	}
	if reqs = requests(t, srv); len(reqs) != 5 || !isSummaryRequest(reqs[3]) {
		t.Fatalf("after the cooldown a summary request was expected, got %d requests", len(reqs))
	}
}

// A context-overflow error from the provider compresses the history and
// retries the call once.
func TestContextOverflowCompressesAndRetriesOnce(t *testing.T) {
	overflow := llmtest.Turn{Status: 400, Error: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."}
	st, sid := openStore(t)
	srv, prov := newFakeModel(t, overflow, llmtest.Turn{Text: "## Goal\nsummary"}, llmtest.Turn{Text: "fits now"})
	comp := NewCompressor(CompressorOptions{Provider: prov, Model: "fake", ContextWindow: 1_000_000, ProtectFirstN: 2, ProtectLastN: 3, Rewriter: storeRewriter{st}})
	log := &eventLog{}
	a := New(Options{Provider: prov, Model: "fake", Recorder: st, Compactor: comp, OnEvent: log.add})
	s := &Session{ID: sid, System: "SYS", History: longHistory(t, st, sid)}
	res, err := a.RunTurn(context.Background(), s, "go on")
	if err != nil || res.Text != "fits now" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	reqs := requests(t, srv)
	if len(reqs) != 3 || isSummaryRequest(reqs[0]) || !isSummaryRequest(reqs[1]) {
		t.Fatalf("want overflow, summary, retry; got %d requests", len(reqs))
	}
	if n, full := len(reqs[2].Messages), len(reqs[0].Messages); n >= full {
		t.Fatalf("the retry sent %d messages, the rejected call %d: not compressed", n, full)
	}
	if ns := log.notices(); len(ns) == 0 || !strings.Contains(ns[0], "too long") {
		t.Fatalf("notices = %q", ns)
	}

	// A second overflow after compressing is returned, not retried again.
	st2, sid2 := openStore(t)
	srv2, prov2 := newFakeModel(t, overflow, llmtest.Turn{Text: "## Goal\nsummary"}, overflow, llmtest.Turn{Text: "never"})
	comp2 := NewCompressor(CompressorOptions{Provider: prov2, Model: "fake", ContextWindow: 1_000_000, ProtectFirstN: 2, ProtectLastN: 3, Rewriter: storeRewriter{st2}})
	a2 := New(Options{Provider: prov2, Model: "fake", Recorder: st2, Compactor: comp2})
	_, err = a2.RunTurn(context.Background(), &Session{ID: sid2, History: longHistory(t, st2, sid2)}, "go on")
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || !apiErr.ContextOverflow {
		t.Fatalf("err = %v, want the context overflow error", err)
	}
	if n := len(srv2.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3 (retry once only)", n)
	}
}

// The threshold is compared with the size of the last prompt, not with the
// input tokens summed over every call of the turn: three calls of 300 input
// tokens in a 1000-token window (threshold 500) never need compression.
func TestCompressionThresholdUsesLastPromptSize(t *testing.T) {
	echo := &funcTool{name: "echo", run: func(ctx context.Context, call tool.Call) tool.Result { return tool.Result{Content: "ok"} }}
	u := llm.Usage{InputTokens: 300, OutputTokens: 10}
	call := llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "echo", Args: `{}`}}, Usage: u}
	srv, prov := newFakeModel(t, call, call, llmtest.Turn{Text: "done", Usage: u}, llmtest.Turn{Text: "## Goal\nnot wanted"})
	comp := NewCompressor(CompressorOptions{Provider: prov, Model: "fake", ContextWindow: 1000, Threshold: 0.5, ProtectFirstN: 1, ProtectLastN: 1})
	a := New(Options{Provider: prov, Model: "fake", Compactor: comp, Tools: tool.NewRegistry(echo)})
	res, err := a.RunTurn(context.Background(), &Session{ID: "s"}, "short task")
	if err != nil || res.Text != "done" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	for i, r := range requests(t, srv) {
		if isSummaryRequest(r) {
			t.Fatalf("request %d is a summary request: compression triggered by the turn's summed usage", i+1)
		}
	}
	if res.Usage.InputTokens != 900 {
		t.Fatalf("turn usage = %+v, want the sum of the three calls", res.Usage)
	}
}

// The reported size of the last prompt does trigger compression when it is
// over the threshold, even if the local estimate is small.
func TestCompressionTriggeredByReportedUsage(t *testing.T) {
	echo := &funcTool{name: "echo", run: func(ctx context.Context, call tool.Call) tool.Result { return tool.Result{Content: "ok"} }}
	big := llm.Usage{InputTokens: 700}
	srv, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "echo", Args: `{}`}}, Usage: big},
		llmtest.Turn{Text: "## Goal\nshort"},
		llmtest.Turn{Text: "done"},
	)
	comp := NewCompressor(CompressorOptions{Provider: prov, Model: "fake", ContextWindow: 1000, Threshold: 0.5, ProtectFirstN: 1, ProtectLastN: 1})
	a := New(Options{Provider: prov, Model: "fake", Compactor: comp, Tools: tool.NewRegistry(echo)})
	s := &Session{ID: "s", History: []llm.Message{{Role: llm.RoleUser, Content: "a"}, {Role: llm.RoleAssistant, Content: "b"}}}
	if _, err := a.RunTurn(context.Background(), s, "c"); err != nil {
		t.Fatal(err)
	}
	reqs := requests(t, srv)
	if len(reqs) != 3 || !isSummaryRequest(reqs[1]) {
		t.Fatalf("want the second request to be a summary (last prompt 700 > 500), got %d requests", len(reqs))
	}
}
