package session

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/llm/textcall"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"
)

// delegate_task limits and defaults (Hermes "delegation.md"; the depth is
// capped at 2 here).
const (
	defaultMaxChildren   = 3
	defaultChildTurns    = 50
	maxSpawnDepth        = config.MaxSpawnDepth
	maxDelegatedTasks    = 8
	maxDelegateTextBytes = 16 << 10 // goal or context
	maxChildSummaryBytes = 20 << 10
)

// childBlockedTools are never given to a subagent (Hermes: children do
// not ask the user, write memory, message chats or schedule jobs);
// delegate_task itself is added back below the depth limit.
var childBlockedTools = []string{"clarify", "memory", "send_message", "cronjob", "delegate_task"}

// delegateTool is delegate_task: it runs subagents, each with a fresh
// conversation of its own (the goal and context only), on the session's
// model, backend (the same box) and approvals, and returns their
// summaries. depth is the depth of the subagents it spawns (1 = children
// of a user session). parent and tools are set for a subagent's own
// delegate_task (its children's parent and the toolsets it may pass on);
// for a user session they come from the calling session.
type delegateTool struct {
	rt     *Runtime
	depth  int
	parent string
	tools  *tool.Registry
}

// delegateTask is one subtask.
type delegateTask struct {
	Goal     string   `json:"goal"`
	Context  string   `json:"context"`
	Toolsets []string `json:"toolsets"`
}

// Spec implements tool.Tool.
func (d *delegateTool) Spec() llm.ToolSpec {
	task := `"goal":{"type":"string","description":"What the subagent must achieve, self-contained: it sees nothing of this conversation."},` +
		`"context":{"type":"string","description":"Facts, paths, constraints and findings the subagent needs."},` +
		`"toolsets":{"type":"array","items":{"type":"string"},"description":"Toolsets it may use (default: yours, without clarify, memory and cronjob)."}`
	return llm.ToolSpec{
		Name: "delegate_task",
		Description: "Delegate work to subagents with their own fresh context: one task (goal, context) or a batch (tasks), " +
			"run in parallel. Each works in the same workspace and environment with your approvals, and returns a summary " +
			"of what it did and its key results. Use it for independent pieces of a larger job or to keep long explorations " +
			"out of your context. Subagents share your turn budget.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` + task + `,` +
			`"tasks":{"type":"array","maxItems":` + fmt.Sprint(maxDelegatedTasks) + `,"items":{"type":"object","properties":{` + task + `},"required":["goal"]},` +
			`"description":"Several independent tasks, run in parallel (instead of goal/context)."}}}`),
	}
}

// Toolset implements tool.Tool.
func (d *delegateTool) Toolset() string { return "delegation" }

// Parallel implements tool.Tool: a batch runs its tasks in parallel itself.
func (d *delegateTool) Parallel() bool { return false }

// Run implements tool.Tool.
func (d *delegateTool) Run(ctx context.Context, call tool.Call) tool.Result {
	var args struct {
		delegateTask
		Tasks []delegateTask `json:"tasks"`
	}
	if err := tool.Decode(call.Args, &args); err != nil {
		return tool.Errorf("delegate_task: %v", err)
	}
	tasks := args.Tasks
	if strings.TrimSpace(args.Goal) != "" {
		tasks = append([]delegateTask{args.delegateTask}, tasks...)
	}
	if err := checkTasks(tasks); err != nil {
		return tool.Errorf("delegate_task: %v", err)
	}
	// call.SessionID is the task id of the calling turn: a user session's
	// id, which its subagents' tools carry too (agent.Options.TaskID).
	root := d.rt.lookup(call.SessionID)
	if root == nil {
		return tool.Errorf("delegate_task: session %s is not open in this process", call.SessionID)
	}
	parent, tools := d.parent, d.tools
	if parent == "" {
		parent, tools = call.SessionID, root.tools
	}
	results := make([]map[string]any, len(tasks))
	limit := d.rt.cfg.Delegation.MaxConcurrentChildren
	if limit <= 0 {
		limit = defaultMaxChildren
	}
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, t := range tasks {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				results[i] = map[string]any{"task_index": i, "goal": t.Goal, "status": "cancelled"}
				return
			}
			results[i] = d.runChild(ctx, call.SessionID, parent, root.agent.Model(), tools, i, t)
		})
	}
	wg.Wait()
	return tool.JSON(map[string]any{"results": results})
}

// checkTasks validates the tasks (errors are for the model).
func checkTasks(tasks []delegateTask) error {
	switch {
	case len(tasks) == 0:
		return fmt.Errorf("give a goal (and context), or tasks: [{goal, context}]")
	case len(tasks) > maxDelegatedTasks:
		return fmt.Errorf("%d tasks; delegate at most %d at once", len(tasks), maxDelegatedTasks)
	}
	for i, t := range tasks {
		switch {
		case strings.TrimSpace(t.Goal) == "":
			return fmt.Errorf("task %d has no goal", i+1)
		case len(t.Goal) > maxDelegateTextBytes || len(t.Context) > maxDelegateTextBytes:
			return fmt.Errorf("task %d: goal and context must each be under %d bytes; write the long parts to a file and name it", i+1, maxDelegateTextBytes)
		}
	}
	return nil
}

// runChild runs one subagent to the end and describes its outcome. Its
// failure is part of the result, never the parent's error.
func (d *delegateTool) runChild(ctx context.Context, taskID, parent, model string, parentTools *tool.Registry, i int, t delegateTask) map[string]any {
	out := map[string]any{"task_index": i, "goal": t.Goal}
	rt := d.rt
	id, err := rt.store.NewSessionID()
	if err != nil {
		out["status"], out["error"] = "failed", err.Error()
		return out
	}
	out["session_id"] = id
	m, err := rt.childModel(model)
	if err != nil {
		out["status"], out["error"] = "failed", err.Error()
		return out
	}
	system := childSystemPrompt(rt.cwd)
	if err := rt.lazy.Defer(store.NewSession{ID: id, Source: "subagent", Model: m.model, Provider: m.name, Cwd: rt.cwd,
		SystemPrompt: system, ParentSessionID: parent}); err != nil {
		out["status"], out["error"] = "failed", err.Error()
		return out
	}
	defer rt.lazy.Forget(id)
	a := agent.New(agent.Options{
		Provider: m.provider, ProviderName: m.name, Fallbacks: m.fallbacks, Model: m.model,
		Tools: d.childTools(id, parentTools, t.Toolsets), Recorder: rt.recorder(), TaskID: taskID,
		MaxTurns: childTurns(rt.cfg.Delegation.MaxIterations), MaxTokens: rt.cfg.Model.MaxTokens,
		ReasoningEffort: rt.cfg.Agent.ReasoningEffort, ParseTextToolCalls: textcall.Extract, Now: rt.opts.Now,
		SpillDir: filepath.Join(rt.opts.Home, "cache", "context"), Redact: rt.redact.Redact,
	})
	prompt := "Goal: " + t.Goal
	if strings.TrimSpace(t.Context) != "" {
		prompt += "\n\nContext:\n" + t.Context
	}
	res, err := a.RunTurn(ctx, &agent.Session{ID: id, System: system}, prompt)
	out["api_calls"], out["tool_calls"] = res.APICalls, res.ToolCalls
	switch {
	case err != nil && ctx.Err() != nil:
		out["status"] = "cancelled"
	case err != nil:
		out["status"], out["error"] = "failed", rt.redact.Redact(err.Error())
	case res.Stopped != "":
		out["status"] = res.Stopped // max_turns, repeated_failure: the summary says how far it got
	default:
		out["status"] = "completed"
	}
	if res.Text != "" {
		out["summary"] = clip(res.Text, maxChildSummaryBytes)
	}
	return out
}

// childTools is a subagent's registry: the parent's tools (narrowed to
// toolsets, or delegation.default_toolsets, when given) without the
// blocked ones, with a todo list of its own and, below the depth limit,
// a delegate_task that spawns one level deeper.
func (d *delegateTool) childTools(id string, parentTools *tool.Registry, toolsets []string) *tool.Registry {
	if len(toolsets) == 0 {
		toolsets = d.rt.cfg.Delegation.DefaultToolsets
	}
	r := parentTools
	if len(toolsets) > 0 {
		r = r.Filter(toolsets)
	}
	r = r.Without(childBlockedTools).Clone()
	if _, ok := r.Get("todo"); ok {
		r.Add(tool.NewTodoList())
	}
	if _, ok := r.Get("execute_code"); ok {
		// Its scripts call the subagent's tools, not the parent session's.
		opts := d.rt.codeOpts
		opts.Tools = func(string) *tool.Registry { return r }
		r.Add(tool.NewExecuteCode(opts))
	}
	depth := min(max(d.rt.cfg.Delegation.MaxSpawnDepth, 1), maxSpawnDepth)
	if d.depth < depth {
		r.Add(&delegateTool{rt: d.rt, depth: d.depth + 1, parent: id, tools: r})
	}
	return r
}

// childRoute is the model a subagent runs on.
type childRoute struct {
	provider  llm.Provider
	name      string // the provider's resolved name
	model     string
	fallbacks []agent.Route
}

// childModel is the subagents' model: delegation.{provider,model,base_url,
// api_key} (Hermes "delegation.md"), else parentModel on the parent's
// provider and fallback chain. A model of another provider or endpoint is
// built once, with its own key (never the parent's) and no fallbacks.
// Errors name the delegation key to fix.
func (rt *Runtime) childModel(parentModel string) (childRoute, error) {
	d := rt.cfg.Delegation
	main := childRoute{provider: rt.provider, name: rt.provName, model: parentModel, fallbacks: rt.fallbacks}
	if d.Provider == "" && d.Model == "" && d.BaseURL == "" && d.APIKey == "" {
		return main, nil
	}
	rt.auxMu.Lock()
	defer rt.auxMu.Unlock()
	if rt.delegation == nil {
		popts := rt.popts
		popts.Provider, popts.Model = rt.provName, parentModel
		a, err := providers.ResolveAux(popts, rt.provider, providers.AuxSettings{
			Provider: d.Provider, Model: d.Model, BaseURL: d.BaseURL, APIKey: d.APIKey}, 0)
		if err != nil {
			return childRoute{}, fmt.Errorf("delegation: %w (see hermes config check)", err)
		}
		rt.delegation = &a
	}
	if rt.delegation.Main {
		main.model = rt.delegation.Model
		return main, nil
	}
	return childRoute{provider: rt.delegation.Provider, name: rt.delegation.Name, model: rt.delegation.Model}, nil
}

func childTurns(n int) int {
	if n <= 0 {
		return defaultChildTurns
	}
	return n
}

// childSystemPrompt is a subagent's system prompt: no memory or persona
// (Hermes: children get the goal and context only).
func childSystemPrompt(cwd string) string {
	return "You are a subagent of Hermes Agent, given one task by another agent. You see only the goal and context it wrote. " +
		"Work in the workspace " + cwd + " with your tools; nobody can answer questions, so decide and state your assumptions. " +
		"When you are done, answer with a concise summary: what you did, the key results (paths, commands, values, findings) " +
		"and anything left undone. That answer is all the other agent receives."
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "\n[… summary cut]"
}
