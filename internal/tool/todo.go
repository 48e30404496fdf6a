package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
)

// Todo limits, as in Hermes Agent (tools/todo_tool.py).
const (
	maxTodoItems   = 256
	maxTodoContent = 4000
)

// TodoItem is one entry of a session's task list.
type TodoItem struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"` // pending | in_progress | completed | cancelled
}

// TodoList is the `todo` tool (alias todo_list) and the per-session task
// lists behind it. Calling the tool without arguments reads the list; with
// `todos` it replaces the list, or with `merge: true` updates items by id and
// appends new ones. Lists live in memory per session; Pending renders the
// open items for re-injection after context compression.
type TodoList struct {
	mu    sync.Mutex
	lists map[string][]TodoItem
}

// NewTodoList returns an empty todo tool.
func NewTodoList() *TodoList { return &TodoList{lists: map[string][]TodoItem{}} }

// Spec implements Tool.
func (t *TodoList) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "todo",
		Description: "Manage your task list for the current session. Call with no arguments to read it. " +
			"Pass `todos` to replace the list, or `todos` with `merge: true` to update items by id and add new ones. " +
			"Statuses: pending, in_progress (at most one), completed, cancelled. Use it for multi-step work.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"todos":{"type":"array","items":{"type":"object","properties":{` +
			`"id":{"type":"string"},"content":{"type":"string"},` +
			`"status":{"type":"string","enum":["pending","in_progress","completed","cancelled"]}},` +
			`"required":["id"]}},` +
			`"merge":{"type":"boolean","description":"update by id instead of replacing the list"}}}`),
	}
}

// Toolset implements Tool.
func (t *TodoList) Toolset() string { return "todo" }

// Parallel implements Tool: the list is per session and calls are ordered.
func (t *TodoList) Parallel() bool { return false }

// Run implements Tool.
func (t *TodoList) Run(_ context.Context, call Call) Result {
	var args struct {
		Todos *[]TodoItem `json:"todos"`
		Merge bool        `json:"merge"`
	}
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.lists[call.SessionID]
	if args.Todos != nil {
		next, err := applyTodos(cur, *args.Todos, args.Merge)
		if err != nil {
			return Errorf("%v", err)
		}
		t.lists[call.SessionID] = next
		cur = next
	}
	return JSON(map[string]any{"todos": nonNil(cur), "summary": todoSummary(cur)})
}

func applyTodos(cur, in []TodoItem, merge bool) ([]TodoItem, error) {
	var next []TodoItem
	if merge {
		next = append(next, cur...)
	}
	index := map[string]int{}
	for i, it := range next {
		index[it.ID] = i
	}
	for _, it := range in {
		it.ID = strings.TrimSpace(it.ID)
		if it.ID == "" {
			return nil, fmt.Errorf("every todo needs a non-empty id")
		}
		if len(it.Content) > maxTodoContent {
			return nil, fmt.Errorf("todo %q: content is %d chars; the limit is %d", it.ID, len(it.Content), maxTodoContent)
		}
		if i, ok := index[it.ID]; ok {
			if it.Content == "" {
				it.Content = next[i].Content
			}
			if it.Status == "" {
				it.Status = next[i].Status
			}
			next[i] = it
			continue
		}
		if it.Content == "" {
			return nil, fmt.Errorf("todo %q: content is required for a new item", it.ID)
		}
		if it.Status == "" {
			it.Status = "pending"
		}
		index[it.ID] = len(next)
		next = append(next, it)
	}
	inProgress := 0
	for _, it := range next {
		switch it.Status {
		case "pending", "completed", "cancelled":
		case "in_progress":
			inProgress++
		default:
			return nil, fmt.Errorf("todo %q: status %q is not one of pending, in_progress, completed, cancelled", it.ID, it.Status)
		}
	}
	if inProgress > 1 {
		return nil, fmt.Errorf("only one todo may be in_progress at a time; %d are", inProgress)
	}
	if len(next) > maxTodoItems {
		return nil, fmt.Errorf("the list would have %d items; the limit is %d", len(next), maxTodoItems)
	}
	return next, nil
}

func todoSummary(items []TodoItem) map[string]int {
	s := map[string]int{"total": len(items)}
	for _, it := range items {
		s[it.Status]++
	}
	return s
}

func nonNil(items []TodoItem) []TodoItem {
	if items == nil {
		return []TodoItem{}
	}
	return items
}

// Pending renders the session's pending and in-progress items as a block
// for re-injection after context compression, or "" when there are none.
func (t *TodoList) Pending(sessionID string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, it := range t.lists[sessionID] {
		if it.Status == "pending" || it.Status == "in_progress" {
			fmt.Fprintf(&b, "- [%s] %s: %s\n", it.Status, it.ID, it.Content)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "[Your active task list was preserved across context compression]\n" + b.String()
}

// Restore sets a session's list from the last todo tool result found in its
// history, so a resumed session keeps its tasks.
func (t *TodoList) Restore(sessionID string, history []llm.Message) {
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		if m.Role != llm.RoleTool || (m.ToolName != "todo" && m.ToolName != "todo_list") || m.IsError {
			continue
		}
		var res struct {
			Todos []TodoItem `json:"todos"`
		}
		if json.Unmarshal([]byte(m.Content), &res) == nil {
			t.mu.Lock()
			t.lists[sessionID] = res.Todos
			t.mu.Unlock()
		}
		return
	}
}
