package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/tool"
)

// maxTitle bounds a tool call's title (a command line can be long).
const maxTitle = 200

// toolCalls maps one prompt's tool events to tool_call updates and keeps
// the session's list of announced, unfinished calls (which an edit
// permission request refers to).
type toolCalls struct {
	as   *acpSession
	open []string // call ids announced and not ended, in order
}

func newToolCalls(as *acpSession) *toolCalls { return &toolCalls{as: as} }

// toolArgs are the arguments of the tools whose calls show more than a title.
type toolArgs struct {
	Command   string `json:"command"`
	Path      string `json:"path"`
	Pattern   string `json:"pattern"`
	Query     string `json:"query"`
	Content   string `json:"content"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
	Offset    int    `json:"offset"`
	Action    string `json:"action"`
	Name      string `json:"name"`
}

// start announces a call (tool_call, in progress).
func (t *toolCalls) start(id, name, rawArgs string) sdk.SessionUpdate {
	t.open = append(t.open, id)
	t.as.announce(name, id)
	a := parseArgs(rawArgs)
	kind, title := describe(name, a)
	tc := &sdk.SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: sdk.ToolCallId(id), Title: title,
		Kind: kind, Status: sdk.ToolCallStatusInProgress, RawInput: rawInput(rawArgs),
		Content: t.startContent(name, a), Locations: t.locations(name, a)}
	return sdk.SessionUpdate{ToolCall: tc}
}

// end reports a call's result (tool_call_update), and the plan when the
// call was the todo tool's.
func (t *toolCalls) end(id, name, rawArgs, result string, isError bool) []sdk.SessionUpdate {
	if !slices.Contains(t.open, id) { // ended without start (cancelled before running)
		out := []sdk.SessionUpdate{t.start(id, name, rawArgs)}
		return append(out, t.end(id, name, rawArgs, result, isError)...)
	}
	t.open = slices.DeleteFunc(t.open, func(x string) bool { return x == id })
	t.as.retire(name, id)
	status := sdk.ToolCallStatusCompleted
	if isError {
		status = sdk.ToolCallStatusFailed
	}
	a := parseArgs(rawArgs)
	var content []sdk.ToolCallContent
	switch name {
	case "terminal":
		content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("$ " + a.Command + "\n" + terminalText(result)))}
	case "patch", "write_file":
		content = t.startContent(name, a)
		if isError {
			content = append(content, sdk.ToolContent(sdk.TextBlock(result)))
		}
	default:
		content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(result))}
	}
	out := []sdk.SessionUpdate{sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(status),
		sdk.WithUpdateContent(content), sdk.WithUpdateRawOutput(map[string]any{"content": result, "is_error": isError}))}
	if (name == "todo" || name == "todo_list") && !isError {
		if plan, ok := planOf(result); ok {
			out = append(out, plan)
		}
	}
	return out
}

// abandon fails the calls still open when the turn ended (cancelled).
func (t *toolCalls) abandon() []sdk.SessionUpdate {
	var out []sdk.SessionUpdate
	for _, id := range t.open {
		out = append(out, sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(sdk.ToolCallStatusFailed),
			sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("cancelled"))})))
	}
	t.clear()
	return out
}

func (t *toolCalls) clear() {
	t.open = nil
	t.as.retireAll()
}

func (t *toolCalls) startContent(name string, a toolArgs) []sdk.ToolCallContent {
	switch name {
	case "terminal":
		return []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("$ " + a.Command))}
	case "patch":
		return []sdk.ToolCallContent{sdk.ToolDiffContent(t.abs(a.Path), a.NewString, a.OldString)}
	case "write_file":
		return []sdk.ToolCallContent{sdk.ToolDiffContent(t.abs(a.Path), a.Content)}
	}
	return nil
}

func (t *toolCalls) locations(name string, a toolArgs) []sdk.ToolCallLocation {
	switch name {
	case "read_file":
		loc := sdk.ToolCallLocation{Path: t.abs(a.Path)}
		if a.Offset > 0 {
			loc.Line = sdk.Ptr(a.Offset)
		}
		return []sdk.ToolCallLocation{loc}
	case "patch", "write_file":
		return []sdk.ToolCallLocation{{Path: t.abs(a.Path)}}
	case "search_files":
		p := a.Path
		if p == "" {
			p = "."
		}
		return []sdk.ToolCallLocation{{Path: t.abs(p)}}
	}
	return nil
}

// abs resolves a tool's path argument against the session's workspace.
func (t *toolCalls) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return p
	}
	return filepath.Join(t.as.cwd, p)
}

// describe returns a call's ACP kind and title.
func describe(name string, a toolArgs) (sdk.ToolKind, string) {
	switch name {
	case "terminal":
		return sdk.ToolKindExecute, clip(a.Command)
	case "process":
		return sdk.ToolKindExecute, clip("process " + a.Action)
	case "read_file":
		return sdk.ToolKindRead, "Read " + a.Path
	case "write_file":
		return sdk.ToolKindEdit, "Write " + a.Path
	case "patch":
		return sdk.ToolKindEdit, "Edit " + a.Path
	case "search_files":
		return sdk.ToolKindSearch, clip("Search " + a.Pattern)
	case "session_search":
		return sdk.ToolKindSearch, clip("Search past sessions: " + a.Query)
	case "todo", "todo_list":
		return sdk.ToolKindThink, "Update plan"
	case "skill_view", "skills_list":
		return sdk.ToolKindRead, clip(strings.TrimSpace(name + " " + a.Name))
	}
	return sdk.ToolKindOther, name
}

// terminalText is a terminal result as an editor shows it: the output,
// then the exit status or error when the command failed; a result that is
// not the terminal tool's JSON is shown as it is.
func terminalText(result string) string {
	var r struct {
		Output   *string `json:"output"`
		ExitCode int     `json:"exit_code"`
		Signal   string  `json:"signal"`
		Error    string  `json:"error"`
		Note     string  `json:"note"`
	}
	if json.Unmarshal([]byte(result), &r) != nil || r.Output == nil {
		return result
	}
	text := *r.Output
	var tail []string
	switch {
	case r.Signal != "":
		tail = append(tail, "[killed by "+r.Signal+"]")
	case r.ExitCode != 0:
		tail = append(tail, fmt.Sprintf("[exit code %d]", r.ExitCode))
	}
	for _, t := range []string{r.Error, r.Note} {
		if t != "" {
			tail = append(tail, "["+t+"]")
		}
	}
	if len(tail) > 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += strings.Join(tail, "\n")
	}
	return text
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxTitle {
		return string(r[:maxTitle]) + "…"
	}
	return s
}

func parseArgs(raw string) toolArgs {
	var a toolArgs
	_ = json.Unmarshal([]byte(raw), &a) // bad arguments: the title is the tool's name
	return a
}

func rawInput(raw string) any {
	var v any
	if json.Unmarshal([]byte(raw), &v) != nil {
		return raw
	}
	return v
}

// planOf reads the todo tool's result ({"todos": [...]}) as a plan update.
func planOf(result string) (sdk.SessionUpdate, bool) {
	var res struct {
		Todos []tool.TodoItem `json:"todos"`
	}
	if json.Unmarshal([]byte(result), &res) != nil {
		return sdk.SessionUpdate{}, false
	}
	entries := []sdk.PlanEntry{}
	for _, it := range res.Todos {
		st := sdk.PlanEntryStatusPending
		switch it.Status {
		case "in_progress":
			st = sdk.PlanEntryStatusInProgress
		case "completed":
			st = sdk.PlanEntryStatusCompleted
		case "cancelled":
			continue
		}
		entries = append(entries, sdk.PlanEntry{Content: it.Content, Status: st, Priority: sdk.PlanEntryPriorityMedium})
	}
	return sdk.UpdatePlan(entries...), true
}

// announce records that call id of tool name was sent to the client.
func (as *acpSession) announce(name, id string) {
	as.mu.Lock()
	as.calls[name] = append(as.calls[name], id)
	close(as.changed)
	as.changed = make(chan struct{})
	as.mu.Unlock()
}

func (as *acpSession) retire(name, id string) {
	as.mu.Lock()
	as.calls[name] = slices.DeleteFunc(as.calls[name], func(x string) bool { return x == id })
	as.mu.Unlock()
}

func (as *acpSession) retireAll() {
	as.mu.Lock()
	clear(as.calls)
	as.mu.Unlock()
}

// openCall returns the newest announced, unfinished call of tool name, or
// a channel closed when the calls change.
func (as *acpSession) openCall(name string) (string, <-chan struct{}) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if ids := as.calls[name]; len(ids) > 0 {
		return ids[len(ids)-1], nil
	}
	return "", as.changed
}
