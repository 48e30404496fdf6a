package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// openStore opens a real session store in a temp dir with one session.
func openStore(t *testing.T) (store.Store, string) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sess, err := st.CreateSession(context.Background(), store.NewSession{Source: "test", Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	return st, sess.ID
}

// A model response with three calls of a parallel-safe tool runs them at
// the same time (each call waits until all three have started, which would
// never happen if they ran one after another) and the results go back to the
// model in call order although they finish in reverse order.
func TestToolCallsRunConcurrentlyAndReturnInCallOrder(t *testing.T) {
	const n = 3
	var started sync.WaitGroup
	started.Add(n)
	allStarted := make(chan struct{})
	go func() { started.Wait(); close(allStarted) }()
	finished := make([]chan struct{}, n)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	var orderMu sync.Mutex
	var finishOrder []int
	slow := &funcTool{name: "probe", parallel: true, run: func(ctx context.Context, call tool.Call) tool.Result {
		var a struct{ N int }
		if err := tool.Decode(call.Args, &a); err != nil {
			return tool.Errorf("%v", err)
		}
		started.Done()
		select {
		case <-allStarted:
		case <-time.After(time.Until(waitfor.Deadline(t))):
			return tool.Errorf("call %d: the other calls never started: tools ran sequentially", a.N)
		}
		if a.N+1 < n { // finish in reverse order: wait for the next call
			<-finished[a.N+1]
		}
		orderMu.Lock()
		finishOrder = append(finishOrder, a.N)
		orderMu.Unlock()
		close(finished[a.N])
		return tool.Result{Content: fmt.Sprintf("result of call %d", a.N)}
	}}
	srv, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "c0", Name: "probe", Args: `{"n":0}`},
			{ID: "c1", Name: "probe", Args: `{"n":1}`},
			{ID: "c2", Name: "probe", Args: `{"n":2}`},
		}},
		llmtest.Turn{Text: "all done"},
	)
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(slow)})
	s := &Session{ID: "s1", System: "sys"}
	res, err := a.RunTurn(context.Background(), s, "probe three times")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "all done" || res.ToolCalls != 3 || res.APICalls != 2 {
		t.Fatalf("result = %+v", res)
	}
	if fmt.Sprint(finishOrder) != "[2 1 0]" {
		t.Fatalf("finish order = %v, want [2 1 0]", finishOrder)
	}
	reqs := requests(t, srv)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var got []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			got = append(got, m.ToolCallID+"="+m.Text())
		}
	}
	want := "[c0=result of call 0 c1=result of call 1 c2=result of call 2]"
	if fmt.Sprint(got) != want {
		t.Fatalf("tool results sent back = %v, want %s", got, want)
	}
}

// A tool that is not parallel-safe makes the whole batch sequential.
func TestNonParallelToolRunsCallsOneAfterAnother(t *testing.T) {
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	track := func(ctx context.Context, call tool.Call) tool.Result {
		mu.Lock()
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return tool.Result{Content: "ok"}
	}
	_, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "reader", Args: `{}`}, {Name: "writer", Args: `{}`}, {Name: "reader", Args: `{}`}}},
		llmtest.Turn{Text: "done"},
	)
	reg := tool.NewRegistry(&funcTool{name: "reader", parallel: true, run: track}, &funcTool{name: "writer", run: track})
	a := New(Options{Provider: prov, Model: "fake", Tools: reg})
	if _, err := a.RunTurn(context.Background(), &Session{ID: "s"}, "go"); err != nil {
		t.Fatal(err)
	}
	if maxInFlight != 1 {
		t.Fatalf("%d calls ran at once; a batch with a non-parallel tool must run sequentially", maxInFlight)
	}
}

// An unknown tool and malformed JSON arguments come back to the model as
// error results, the valid call of the same response still runs, and the
// loop goes on to the model's final answer.
func TestUnknownToolAndMalformedArgumentsAreErrorResults(t *testing.T) {
	ran := 0
	echo := &funcTool{name: "echo", run: func(ctx context.Context, call tool.Call) tool.Result {
		ran++
		return tool.Result{Content: "echo " + string(call.Args)}
	}}
	srv, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "u", Name: "no_such_tool", Args: `{}`},
			{ID: "m", Name: "echo", Args: `{"n": 1,`},
			{ID: "ok", Name: "echo", Args: `{"n": 2}`},
		}},
		llmtest.Turn{Text: "recovered"},
	)
	rec, sid := openStore(t)
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(echo), Recorder: rec})
	res, err := a.RunTurn(context.Background(), &Session{ID: sid}, "try things")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "recovered" || res.Stopped != "" {
		t.Fatalf("result = %+v", res)
	}
	if ran != 1 {
		t.Fatalf("echo ran %d times; the malformed call must not run, the valid one must", ran)
	}
	results := map[string]string{}
	for _, m := range requests(t, srv)[1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Text()
		}
	}
	if r := results["u"]; !strings.Contains(r, `unknown tool "no_such_tool"`) || !strings.Contains(r, "echo") {
		t.Errorf("unknown tool result = %q, want the name and the available tools", r)
	}
	if r := results["m"]; !strings.Contains(r, "not a valid JSON object") || !strings.Contains(r, `{"n": 1,`) {
		t.Errorf("malformed arguments result = %q", r)
	}
	if r := results["ok"]; r != `echo {"n": 2}` {
		t.Errorf("valid call result = %q", r)
	}
	stored, err := rec.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	errorsStored := 0
	for _, m := range stored {
		if m.Role == llm.RoleTool && m.IsError {
			errorsStored++
		}
	}
	if errorsStored != 2 {
		t.Fatalf("%d error results stored, want 2: %+v", errorsStored, stored)
	}
}

// The same failing call repeated stops the turn with an explanation instead
// of looping until the budget is spent.
func TestRepeatedFailingCallStopsTheTurn(t *testing.T) {
	fail := &funcTool{name: "deploy", run: func(ctx context.Context, call tool.Call) tool.Result {
		return tool.Errorf("permission denied: /srv/app\nmore detail")
	}}
	same := llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "deploy", Args: `{"n": 7}`}}}
	srv, prov := newFakeModel(t, same, same, same, llmtest.Turn{Text: "should not be asked"})
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(fail)})
	s := &Session{ID: "s"}
	res, err := a.RunTurn(context.Background(), s, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "repeated_failure" {
		t.Fatalf("Stopped = %q, want repeated_failure", res.Stopped)
	}
	if !strings.Contains(res.Text, "deploy") || !strings.Contains(res.Text, "3 times") || !strings.Contains(res.Text, "permission denied") {
		t.Fatalf("explanation = %q", res.Text)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3 (stop after the third identical failure)", n)
	}
	last := s.History[len(s.History)-1]
	if last.Role != llm.RoleAssistant || last.Content != res.Text {
		t.Fatalf("the explanation is not the last message of the history: %+v", last)
	}
}

// A call that fails with different arguments each time is the model trying
// something new, not a loop.
func TestVaryingFailingCallsDoNotStopTheTurn(t *testing.T) {
	fail := &funcTool{name: "deploy", run: func(ctx context.Context, call tool.Call) tool.Result {
		return tool.Errorf("nope")
	}}
	var turns []llmtest.Turn
	for i := range 4 {
		turns = append(turns, llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "deploy", Args: fmt.Sprintf(`{"n": %d}`, i)}}})
	}
	turns = append(turns, llmtest.Turn{Text: "gave up politely"})
	_, prov := newFakeModel(t, turns...)
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(fail)})
	res, err := a.RunTurn(context.Background(), &Session{ID: "s"}, "deploy")
	if err != nil || res.Stopped != "" || res.Text != "gave up politely" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
}

// At the iteration budget one more call is made without tools, after a
// note asking for the final answer; tool calls in that answer are ignored.
func TestMaxTurnsEndsWithWrapUpCallWithoutTools(t *testing.T) {
	echo := &funcTool{name: "echo", run: func(ctx context.Context, call tool.Call) tool.Result { return tool.Result{Content: "ok"} }}
	call := llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "echo", Args: `{}`}}}
	srv, prov := newFakeModel(t, call, call,
		llmtest.Turn{Text: "summary of work", ToolCalls: []llmtest.Call{{Name: "echo", Args: `{}`}}})
	log := &eventLog{}
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(echo), MaxTurns: 2, OnEvent: log.add})
	res, err := a.RunTurn(context.Background(), &Session{ID: "s"}, "loop")
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "max_turns" || res.Text != "summary of work" || res.ToolCalls != 2 {
		t.Fatalf("res = %+v", res)
	}
	reqs := requests(t, srv)
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if len(reqs[0].Tools) == 0 || len(reqs[1].Tools) == 0 {
		t.Fatal("the calls within budget must offer tools")
	}
	if len(reqs[2].Tools) != 0 {
		t.Fatalf("the wrap-up call offered %d tools, want none", len(reqs[2].Tools))
	}
	msgs := reqs[2].Messages
	if last := msgs[len(msgs)-1]; last.Role != "user" || !strings.Contains(last.Text(), "Do not call tools") {
		t.Fatalf("last message of the wrap-up call = %+v", last)
	}
	if ns := log.notices(); len(ns) != 1 || !strings.Contains(ns[0], "max turns (2)") {
		t.Fatalf("notices = %q", ns)
	}
}

// Cancelling the turn while a tool runs stores a synthetic cancelled result
// for it (and for the calls that had not started), so the saved history is
// valid and the next turn can be sent.
func TestCancellationMidToolStoresCancelledResult(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	block := &funcTool{name: "wait", run: func(ctx context.Context, call tool.Call) tool.Result {
		cancel() // the person presses Ctrl-C while this tool runs
		<-ctx.Done()
		return tool.Result{}
	}}
	srv, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "w", Name: "wait", Args: `{}`}, {ID: "x", Name: "wait", Args: `{}`}}},
		llmtest.Turn{Text: "resumed fine"},
	)
	rec, sid := openStore(t)
	a := New(Options{Provider: prov, Model: "fake", Tools: tool.NewRegistry(block), Recorder: rec})
	s := &Session{ID: sid}
	_, err := a.RunTurn(ctx, s, "wait for it")
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
	stored, err := rec.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 4 {
		t.Fatalf("stored %d messages, want user, assistant, 2 results: %+v", len(stored), stored)
	}
	for i, id := range []string{"w", "x"} {
		m := stored[2+i]
		if m.Role != llm.RoleTool || m.ToolCallID != id || m.Content != CancelledResult || !m.IsError {
			t.Fatalf("stored result %d = %+v, want the cancelled result for %s", i, m, id)
		}
	}
	// The next turn on the stored history is accepted.
	s2 := &Session{ID: sid, History: stored}
	res, err := a.RunTurn(context.Background(), s2, "go on")
	if err != nil || res.Text != "resumed fine" {
		t.Fatalf("next turn: %+v, %v", res, err)
	}
	if n := len(requests(t, srv)[1].Messages); n != 5 {
		t.Fatalf("second request has %d messages, want 5", n)
	}
}

// RepairHistory adds an unknown-outcome result for a tool call whose result is
// missing (a crash between call and result), keeps results next to their
// call in call order, and drops results whose call is not in the history.
func TestRepairHistory(t *testing.T) {
	h := []llm.Message{
		{Role: llm.RoleTool, ToolCallID: "orphan", Content: "lost"},
		{Role: llm.RoleUser, Content: "do two things"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "read_file"}, {ID: "b", Name: "terminal"}}},
		{Role: llm.RoleTool, ToolCallID: "b", ToolName: "terminal", Content: "b done"},
		{Role: llm.RoleUser, Content: "and now?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "terminal"}}},
	}
	got := RepairHistory(h)
	var shape []string
	for _, m := range got {
		s := string(m.Role)
		if m.Role == llm.RoleTool {
			s += ":" + m.ToolCallID + "=" + m.Content
		}
		shape = append(shape, s)
	}
	want := []string{"user", "assistant", "tool:a=" + UnknownOutcomeResult, "tool:b=b done", "user", "assistant", "tool:c=" + UnknownOutcomeResult}
	if fmt.Sprint(shape) != fmt.Sprint(want) {
		t.Fatalf("repaired history:\n got %q\nwant %q", shape, want)
	}
	if got[2].ToolName != "read_file" || !got[2].IsError {
		t.Fatalf("synthetic result = %+v", got[2])
	}
	// A valid history is left as it is.
	again := RepairHistory(got)
	if fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatal("repairing a valid history changed it")
	}
}

// UnrecordedResults names only the calls of the trailing assistant message
// without a result (what a kill leaves), which a resume stores; a gap
// followed by later messages is left to RepairHistory.
func TestUnrecordedResults(t *testing.T) {
	h := []llm.Message{
		{Role: llm.RoleUser, Content: "do two things"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "old", Name: "terminal"}}},
		{Role: llm.RoleUser, Content: "and now?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "read_file"}, {ID: "b", Name: "terminal"}}},
		{Role: llm.RoleTool, ToolCallID: "b", ToolName: "terminal", Content: "b done"},
	}
	got := UnrecordedResults(h)
	if len(got) != 1 || got[0].ToolCallID != "a" || got[0].ToolName != "read_file" || got[0].Content != UnknownOutcomeResult || !got[0].IsError {
		t.Fatalf("UnrecordedResults = %+v, want one unknown-outcome result for a", got)
	}
	if again := UnrecordedResults(append(h, got...)); len(again) != 0 {
		t.Fatalf("after storing it, UnrecordedResults = %+v, want none", again)
	}
	if none := UnrecordedResults(h[:3]); len(none) != 0 {
		t.Fatalf("a gap before a later message: %+v, want none", none)
	}
}

// A provider error ends the turn with that error and a history that the
// next turn can use.
func TestProviderErrorKeepsHistoryValid(t *testing.T) {
	_, prov := newFakeModel(t, llmtest.Turn{Status: 401, Error: "bad key"}, llmtest.Turn{Text: "ok now"})
	a := New(Options{Provider: prov, Model: "fake"})
	s := &Session{ID: "s"}
	_, err := a.RunTurn(context.Background(), s, "hello")
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("err = %v, want the provider's 401", err)
	}
	res, err := a.RunTurn(context.Background(), s, "hello again")
	if err != nil || res.Text != "ok now" {
		t.Fatalf("next turn: %+v, %v", res, err)
	}
}
