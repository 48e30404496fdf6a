package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/memory"
	"github.com/hermes-go/hermes/internal/skills"
	"github.com/hermes-go/hermes/internal/tool"
)

// busyTurn is the history of a turn with several tool calls.
func busyTurn() []llm.Message {
	return []llm.Message{
		{Role: llm.RoleUser, Content: "Triage incidents/first.json with the runbook"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "a", Name: "read_file", Arguments: `{"path":"runbook.md"}`},
			{ID: "b", Name: "read_file", Arguments: `{"path":"incidents/first.json"}`}}},
		{Role: llm.RoleTool, ToolCallID: "a", ToolName: "read_file", Content: "Check dependency latency before proposing a rollback."},
		{Role: llm.RoleTool, ToolCallID: "b", ToolName: "read_file", Content: `{"release":"checkout-42","paymentsP95Ms":1700}`},
		{Role: llm.RoleAssistant, Content: "Payments p95 is 1700 ms: investigate payments before a rollback."},
	}
}

// After a busy turn the review reads a digest of the conversation, its
// memory add lands on disk, and it reports one notice line per change;
// refused calls and read-only calls are not reported. The reviewed session
// is left untouched.
func TestReviewMemoryAddGivesNoticeLine(t *testing.T) {
	home := t.TempDir()
	mem := memory.NewStore(filepath.Join(home, "memories"), 2200, 1375, time.Now)
	lib := skills.NewLibrary(skills.Roots(home, nil, t.TempDir(), home)...)
	note := "Checkout incidents: check payments latency before any rollback"
	srv, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{Name: "memory", Args: `{"action":"add","target":"memory","content":"` + note + `"}`},
			{Name: "memory", Args: `{"action":"add","target":"memory","content":""}`},
			{Name: "skills_list", Args: `{}`},
		}},
		llmtest.Turn{Text: "Saved one memory."},
	)
	reg := tool.NewRegistry(tool.NewMemory(mem), tool.NewSkillsList(lib), tool.NewSkillManage(lib))
	s := &Session{ID: "sess-1", System: "MAIN SYSTEM", History: busyTurn()}
	before := len(s.History)
	changes, err := Review(context.Background(), ReviewOptions{Provider: prov, Model: "fake", Tools: reg}, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0] != "💾 memory add: "+note {
		t.Fatalf("changes = %q, want one memory add line", changes)
	}
	if strings.Contains(changes[0], "\n") {
		t.Fatal("a notice must be one line")
	}
	data, err := os.ReadFile(filepath.Join(home, "memories", "MEMORY.md"))
	if err != nil || !strings.Contains(string(data), note) {
		t.Fatalf("MEMORY.md = %q, %v", data, err)
	}
	if len(s.History) != before || s.System != "MAIN SYSTEM" {
		t.Fatal("the review modified the reviewed session")
	}
	reqs := requests(t, srv)
	if len(reqs) != 2 {
		t.Fatalf("%d review requests, want 2", len(reqs))
	}
	first := reqs[0]
	if sys := first.Messages[0].Text(); first.Messages[0].Role != "system" || !strings.Contains(sys, "self-improvement reviewer") {
		t.Fatalf("review system prompt = %q", sys)
	}
	digest := first.Messages[1].Text()
	for _, want := range []string{"Triage incidents/first.json", "[read_file call]", "runbook.md", "paymentsP95Ms", "investigate payments"} {
		if !strings.Contains(digest, want) {
			t.Errorf("review digest lacks %q:\n%s", want, digest)
		}
	}
	if len(first.Tools) != 3 {
		t.Fatalf("review offered %d tools, want only the 3 given", len(first.Tools))
	}
}

// A skill created by the review is reported and saved as a real skill.
func TestReviewSkillCreateGivesNoticeLine(t *testing.T) {
	home := t.TempDir()
	lib := skills.NewLibrary(skills.Roots(home, nil, t.TempDir(), home)...)
	content := "---\nname: checkout-triage\ndescription: Triage checkout incidents\n---\n# Checkout triage\n## Procedure\n1. Read the incident.\n"
	_, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "skill_manage", Args: jsonString(t, map[string]string{
			"action": "create", "name": "checkout-triage", "category": "ops", "content": content})}}},
		llmtest.Turn{Text: "Created checkout-triage."},
	)
	changes, err := Review(context.Background(), ReviewOptions{Provider: prov, Model: "fake", Tools: tool.NewRegistry(tool.NewSkillManage(lib))},
		&Session{ID: "s", History: busyTurn()})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0] != "📝 skill checkout-triage create" {
		t.Fatalf("changes = %q", changes)
	}
	if _, err := os.Stat(filepath.Join(home, "skills", "ops", "checkout-triage", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
}

// A review that decides nothing is worth keeping reports no change.
func TestReviewNothingWorthKeeping(t *testing.T) {
	_, prov := newFakeModel(t, llmtest.Turn{Text: "nothing"})
	changes, err := Review(context.Background(), ReviewOptions{Provider: prov, Model: "fake", Tools: tool.NewRegistry()},
		&Session{ID: "s", History: busyTurn()})
	if err != nil || len(changes) != 0 {
		t.Fatalf("changes = %q, err = %v", changes, err)
	}
}

// A memory remove (which has no content, only old_text) is reported with
// the text of the removed entry.
func TestReviewMemoryRemoveNamesTheEntry(t *testing.T) {
	home := t.TempDir()
	mem := memory.NewStore(filepath.Join(home, "memories"), 2200, 1375, time.Now)
	if _, err := mem.Add(memory.TargetUser, "User works on the staging cluster"); err != nil {
		t.Fatal(err)
	}
	_, prov := newFakeModel(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "memory", Args: `{"action":"remove","target":"user","old_text":"staging cluster"}`}}},
		llmtest.Turn{Text: "Removed a stale entry."},
	)
	changes, err := Review(context.Background(), ReviewOptions{Provider: prov, Model: "fake", Tools: tool.NewRegistry(tool.NewMemory(mem))},
		&Session{ID: "s", History: busyTurn()})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0] != "💾 user remove: staging cluster" {
		t.Fatalf("changes = %q", changes)
	}
	st, err := mem.State(memory.TargetUser)
	if err != nil || len(st.Entries) != 0 {
		t.Fatalf("USER.md entries = %q, %v", st.Entries, err)
	}
}
