package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/tool"
)

// ReviewOptions configures the self-improvement review that Hermes Agent
// runs after busy turns ("memory.md": background review): the same provider
// reads a digest of the conversation and may save memories or create or
// patch a skill.
type ReviewOptions struct {
	Provider llm.Provider
	Model    string
	// Tools are the tools the review may use (memory, skills_list,
	// skill_view, skill_manage); others are not offered.
	Tools *tool.Registry
	// MaxTurns bounds the review's tool calls; default 8.
	MaxTurns int
}

const reviewSystem = `You are the self-improvement reviewer of Hermes Agent. You read a finished piece of work
and decide whether something is worth keeping for future sessions:
- durable facts about the user or the environment → the memory tool (target user or memory), one short entry each;
- a reusable multi-step procedure that worked, or a correction to an existing one → skill_manage
  (create a new skill with YAML frontmatter name/description and sections When to Use, Procedure, Pitfalls,
  Verification; or patch the existing skill).
Do nothing when nothing is worth keeping. Never store secrets. Finish with one line saying what you changed, or "nothing".`

// Review runs one review over s's history and returns one-line descriptions
// of what changed (empty when nothing did). Errors are returned for a
// person's notice; the reviewed session is not modified.
func Review(ctx context.Context, o ReviewOptions, s *Session) ([]string, error) {
	if o.MaxTurns <= 0 {
		o.MaxTurns = 8
	}
	var (
		mu      sync.Mutex
		changes []string
	)
	sub := New(Options{
		Provider: o.Provider, Model: o.Model, Tools: o.Tools, MaxTurns: o.MaxTurns,
		OnEvent: func(ev Event) {
			if ev.Kind != EventToolResult || ev.Result.IsError {
				return
			}
			if c := describeChange(ev.Call); c != "" {
				mu.Lock()
				changes = append(changes, c)
				mu.Unlock()
			}
		},
	})
	rs := &Session{ID: s.ID, System: reviewSystem}
	_, err := sub.RunTurn(ctx, rs, "Review this conversation:\n\n"+digest(s.History, 60_000))
	return changes, err
}

// describeChange renders a successful memory or skill_manage call as a
// notice line, or "" for read-only calls.
func describeChange(tc llm.ToolCall) string {
	var a struct {
		Action  string `json:"action"`
		Target  string `json:"target"`
		Name    string `json:"name"`
		Content string `json:"content"`
		OldText string `json:"old_text"`
	}
	_ = json.Unmarshal([]byte(tc.Arguments), &a)
	switch tc.Name {
	case "memory":
		target := a.Target
		if target == "" {
			target = "memory"
		}
		what := a.Content
		if what == "" { // remove names the entry by old_text only
			what = a.OldText
		}
		return fmt.Sprintf("💾 %s %s: %s", target, a.Action, preview(what, 80))
	case "skill_manage":
		return fmt.Sprintf("📝 skill %s %s", a.Name, a.Action)
	}
	return ""
}

// digest renders a history as plain text for the reviewer, keeping the
// newest part when it exceeds max characters.
func digest(h []llm.Message, max int) string {
	var b strings.Builder
	for _, m := range h {
		switch {
		case m.Role == llm.RoleTool:
			fmt.Fprintf(&b, "[%s result] %s\n", m.ToolName, truncate(m.Content, 1500))
		case len(m.ToolCalls) > 0:
			if m.Content != "" {
				fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "[%s call] %s\n", tc.Name, truncate(tc.Arguments, 1500))
			}
		default:
			fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
		}
	}
	s := b.String()
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return s
}

func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
