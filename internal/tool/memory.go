package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/memory"
)

// memoryTool is Hermes' `memory` tool (toolset memory, tools/memory_tool.py).
type memoryTool struct {
	store *memory.Store
}

// NewMemory returns the `memory` tool on store: action add|replace|remove,
// target memory|user, content, old_text. A successful result is a JSON
// object {success, target, message, usage ("67% — 1,474/2,200 chars"),
// entry_count, entries, evicted?}; refusals (empty content, no or several
// matches, blocked content, over the limit) are error results
// {success:false, error, matches?, current_entries?}.
func NewMemory(store *memory.Store) Tool { return &memoryTool{store: store} }

const memoryDescription = "Save durable facts to persistent memory that survives across sessions. " +
	"Memory is injected into future system prompts, so keep entries compact and factual. " +
	"target 'memory' is your notes (environment facts, project conventions, tool quirks, lessons learned); " +
	"target 'user' is who the user is (preferences, style, habits). " +
	"Actions: add (content), replace (old_text = short unique substring of the entry, content = the whole new entry), " +
	"remove (old_text). When a store is full, the oldest entries are archived to make room. " +
	"Do not save task progress or things easily re-discovered; do not save secrets."

var memorySchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["add", "replace", "remove"], "description": "what to do"},
    "target": {"type": "string", "enum": ["memory", "user"], "description": "memory = your notes, user = user profile"},
    "content": {"type": "string", "description": "the entry text (add, replace)"},
    "old_text": {"type": "string", "description": "short unique substring of the entry to replace or remove"}
  },
  "required": ["action", "target"]
}`)

func (m *memoryTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "memory", Description: memoryDescription, Parameters: memorySchema}
}

func (m *memoryTool) Toolset() string { return "memory" }

// Parallel is false: memory writes of one response apply in order.
func (m *memoryTool) Parallel() bool { return false }

type memoryArgs struct {
	Action  string `json:"action"`
	Target  string `json:"target"`
	Content string `json:"content"`
	OldText string `json:"old_text"`
}

func (m *memoryTool) Run(_ context.Context, call Call) Result {
	var a memoryArgs
	if err := Decode(call.Args, &a); err != nil {
		return Errorf("%v", err)
	}
	target, err := memory.ParseTarget(a.Target)
	if err != nil {
		return memoryError(err)
	}
	var out memory.Outcome
	switch strings.TrimSpace(a.Action) {
	case "add":
		out, err = m.store.Add(target, a.Content)
	case "replace":
		out, err = m.store.Replace(target, a.OldText, a.Content)
	case "remove":
		out, err = m.store.Remove(target, a.OldText)
	default:
		return memoryError(&memory.Refusal{Reason: "Unknown action " + memoryQuote(a.Action) + ": use add, replace or remove."})
	}
	if err != nil {
		return memoryError(err)
	}
	body := map[string]any{
		"success":     true,
		"target":      string(target),
		"message":     out.Message,
		"usage":       out.State.Usage(),
		"entry_count": len(out.State.Entries),
		"entries":     memoryEntries(out.State.Entries),
	}
	if len(out.Evicted) > 0 {
		body["evicted"] = out.Evicted
		body["note"] = "The store was full: the evicted entries (oldest first) were moved to memories/ARCHIVE.jsonl."
	}
	return JSON(body)
}

func memoryError(err error) Result {
	body := map[string]any{"success": false, "error": err.Error()}
	var r *memory.Refusal
	if errors.As(err, &r) {
		body["error"] = r.Reason
		if len(r.Candidates) > 0 {
			body["matches"] = r.Candidates
		}
		if r.Entries != nil {
			body["current_entries"] = r.Entries
		}
	}
	res := JSON(body)
	res.IsError = true
	return res
}

// memoryEntries keeps an empty list "[]" rather than null in the result.
func memoryEntries(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func memoryQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
