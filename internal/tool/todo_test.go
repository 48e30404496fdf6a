package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

func runTodo(t *testing.T, td *TodoList, session, args string) (map[string]any, Result) {
	t.Helper()
	r := td.Run(context.Background(), Call{SessionID: session, Args: json.RawMessage(args)})
	var out map[string]any
	if !r.IsError {
		if err := json.Unmarshal([]byte(r.Content), &out); err != nil {
			t.Fatalf("result is not JSON: %v\n%s", err, r.Content)
		}
	}
	return out, r
}

func TestTodoReplaceMergeAndRead(t *testing.T) {
	td := NewTodoList()
	_, r := runTodo(t, td, "s1", `{"todos":[{"id":"1","content":"read runbook","status":"in_progress"},{"id":"2","content":"write report"}]}`)
	if r.IsError {
		t.Fatalf("replace failed: %s", r.Content)
	}
	_, r = runTodo(t, td, "s1", `{"merge":true,"todos":[{"id":"1","status":"completed"},{"id":"3","content":"notify"}]}`)
	if r.IsError {
		t.Fatalf("merge failed: %s", r.Content)
	}
	out, _ := runTodo(t, td, "s1", ``)
	items := out["todos"].([]any)
	if len(items) != 3 {
		t.Fatalf("want 3 items after merge, got %d: %v", len(items), items)
	}
	first := items[0].(map[string]any)
	if first["status"] != "completed" || first["content"] != "read runbook" {
		t.Errorf("merge should keep content and update status: %v", first)
	}
	if got := out["summary"].(map[string]any)["pending"]; got != float64(2) {
		t.Errorf("pending count = %v, want 2", got)
	}
	// Another session has its own list.
	out, _ = runTodo(t, td, "s2", `{}`)
	if n := len(out["todos"].([]any)); n != 0 {
		t.Errorf("session s2 should start empty, has %d", n)
	}
}

func TestTodoValidation(t *testing.T) {
	td := NewTodoList()
	for _, args := range []string{
		`{"todos":[{"id":"1","content":"a","status":"in_progress"},{"id":"2","content":"b","status":"in_progress"}]}`,
		`{"todos":[{"id":"1","content":"a","status":"done"}]}`,
		`{"todos":[{"id":"","content":"a"}]}`,
		`{"todos":[{"id":"1"}]}`,
		`{"todos":"not a list"}`,
	} {
		if _, r := runTodo(t, td, "s", args); !r.IsError {
			t.Errorf("%s: want an error result, got %s", args, r.Content)
		}
	}
	out, _ := runTodo(t, td, "s", ``)
	if n := len(out["todos"].([]any)); n != 0 {
		t.Errorf("rejected updates must not change the list; have %d items", n)
	}
}

func TestTodoPendingAndRestore(t *testing.T) {
	td := NewTodoList()
	_, r := runTodo(t, td, "s", `{"todos":[{"id":"a","content":"done thing","status":"completed"},{"id":"b","content":"open thing"}]}`)
	p := td.Pending("s")
	if !strings.Contains(p, "open thing") || strings.Contains(p, "done thing") {
		t.Errorf("Pending should list only open items:\n%s", p)
	}
	restored := NewTodoList()
	restored.Restore("s", []llm.Message{{Role: llm.RoleTool, ToolName: "todo", Content: r.Content}})
	if restored.Pending("s") != p {
		t.Errorf("restored list differs:\n%s\nwant\n%s", restored.Pending("s"), p)
	}
}
