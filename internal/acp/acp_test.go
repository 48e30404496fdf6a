package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/store"
)

// A prompt whose model runs a dangerous command (allowed once) and a patch
// (denied) streams tool_call updates with the command and the diff, asks
// twice, answers end_turn after every update, and leaves the file as it was.
func TestPromptToolsAndPermissions(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: args(map[string]any{"command": "rm -r build && echo removed"})}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "patch", Args: args(map[string]any{"path": "a.txt", "old_string": "one", "new_string": "two"})}}},
		llmtest.Turn{Reasoning: "all done", Text: "Removed build; the edit was refused.", Usage: llm.Usage{InputTokens: 300, OutputTokens: 30}},
	)
	if err := os.MkdirAll(filepath.Join(w.work, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.work, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := w.connect(sdk.ClientCapabilities{})
	c.answer = func(p sdk.RequestPermissionRequest) string {
		if p.ToolCall.Kind != nil && *p.ToolCall.Kind == sdk.ToolKindEdit {
			return optDeny
		}
		return optOnce
	}
	id := c.newSession(t, w.work)
	c.waitFor(t, "available_commands_update", func(u sdk.SessionUpdate) bool { return u.AvailableCommandsUpdate != nil })
	resp := c.prompt(t, id, "clean up and edit")
	if resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q, want end_turn", resp.StopReason)
	}
	ups := c.snapshot()
	var execStart, editStart *sdk.SessionUpdateToolCall
	var execOutput string
	thought := ""
	for _, n := range ups {
		u := n.Update
		if u.ToolCall != nil && u.ToolCall.Kind == sdk.ToolKindExecute {
			execStart = u.ToolCall
		}
		if u.ToolCall != nil && u.ToolCall.Kind == sdk.ToolKindEdit {
			editStart = u.ToolCall
		}
		if u.ToolCallUpdate != nil && execStart != nil && u.ToolCallUpdate.ToolCallId == execStart.ToolCallId {
			for _, ct := range u.ToolCallUpdate.Content {
				if ct.Content != nil && ct.Content.Content.Text != nil {
					execOutput += ct.Content.Content.Text.Text
				}
			}
		}
		if u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil {
			thought += u.AgentThoughtChunk.Content.Text.Text
		}
	}
	if execStart == nil || !strings.Contains(execStart.Title, "rm -r build") {
		t.Fatalf("no execute tool_call with the command; updates: %s", kindsOf(ups))
	}
	if !strings.Contains(execOutput, "removed") || strings.Contains(execOutput, `"exit_code"`) {
		t.Errorf("terminal output not in the tool_call_update as text (not the model's JSON): %q", execOutput)
	}
	if editStart == nil || len(editStart.Content) == 0 || editStart.Content[0].Diff == nil {
		t.Fatalf("no edit tool_call with diff content: %+v", editStart)
	}
	if d := editStart.Content[0].Diff; d.Path != filepath.Join(w.work, "a.txt") || d.NewText != "two" || d.OldText == nil || *d.OldText != "one" {
		t.Errorf("diff = %+v", d)
	}
	if thought != "all done" {
		t.Errorf("agent_thought_chunk = %q, want the reasoning", thought)
	}
	if got := agentText(ups); got != "Removed build; the edit was refused." {
		t.Errorf("agent text %q", got)
	}
	if resp.Usage == nil || resp.Usage.InputTokens < 300 || resp.Usage.OutputTokens < 30 {
		t.Errorf("prompt usage %+v", resp.Usage)
	}
	if last := ups[len(ups)-1].Update.UsageUpdate; last == nil || last.Used <= 0 {
		t.Errorf("the last update is not usage_update with the context used: %s", kindsOf(ups[len(ups)-1:]))
	}
	if len(c.permissions) != 2 {
		t.Fatalf("%d permission requests, want 2 (command, edit)", len(c.permissions))
	}
	if ids := optionIDs(c.permissions[0]); ids != "allow_once allow_session allow_always deny" {
		t.Errorf("command options %q", ids)
	}
	if ids := optionIDs(c.permissions[1]); ids != "allow_once deny" {
		t.Errorf("edit options %q", ids)
	}
	if c.permissions[0].ToolCall.ToolCallId != execStart.ToolCallId || c.permissions[1].ToolCall.ToolCallId != editStart.ToolCallId {
		t.Errorf("permission requests do not name their tool calls")
	}
	if _, err := os.Stat(filepath.Join(w.work, "build")); !os.IsNotExist(err) {
		t.Errorf("the allowed command did not run: build still there (%v)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.work, "a.txt")); string(b) != "one\n" {
		t.Errorf("denied edit was written: %q", b)
	}
	// The model was told the edit was denied.
	if body := string(w.srv.Requests()[2].Body); !strings.Contains(body, "denied this edit") {
		t.Errorf("the model did not read the denial: %s", body)
	}
	// available_commands_update went out after the session/new response.
	if resp, upd := lineIndex(c.wire.all(), `"sessionId":"`+id+`"`, `"result"`), lineIndex(c.wire.all(), "available_commands_update"); resp < 0 || upd < resp {
		t.Errorf("available_commands_update at line %d, session/new response at %d", upd, resp)
	}
	// Stored with source acp, so `hermes sessions list` shows it.
	st, err := store.Open(filepath.Join(w.home, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	row, err := st.Session(context.Background(), id)
	if err != nil || row.Source != Source {
		t.Fatalf("stored session %+v, %v; want source acp", row, err)
	}
}

func optionIDs(p sdk.RequestPermissionRequest) string {
	var ids []string
	for _, o := range p.Options {
		ids = append(ids, string(o.OptionId))
	}
	return strings.Join(ids, " ")
}

// lineIndex is the index of the first line holding every part, or -1.
func lineIndex(ls []string, parts ...string) int {
	for i, l := range ls {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return i
		}
	}
	return -1
}

// session/cancel while a command runs: the prompt answers cancelled, the
// tool call is marked failed, and the command is stopped.
func TestCancelMidTool(t *testing.T) {
	w := newWorld(t, llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: args(map[string]any{"command": "sleep 30; touch finished"})}}})
	c := w.connect(sdk.ClientCapabilities{})
	id := c.newSession(t, w.work)
	done := make(chan sdk.PromptResponse, 1)
	go func() { done <- c.prompt(t, id, "wait") }()
	c.waitFor(t, "tool_call", func(u sdk.SessionUpdate) bool { return u.ToolCall != nil })
	if err := c.conn.Cancel(context.Background(), sdk.CancelNotification{SessionId: sdk.SessionId(id)}); err != nil {
		t.Fatal(err)
	}
	resp := <-done
	if resp.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("stop reason %q, want cancelled", resp.StopReason)
	}
	failed := false
	for _, n := range c.snapshot() {
		if u := n.Update.ToolCallUpdate; u != nil && u.Status != nil && *u.Status == sdk.ToolCallStatusFailed {
			failed = true
		}
	}
	if !failed {
		t.Errorf("the running tool call was not reported failed: %s", kindsOf(c.snapshot()))
	}
	if _, err := os.Stat(filepath.Join(w.work, "finished")); err == nil {
		t.Errorf("the command ran to the end")
	}
}

// A session loaded on a new connection replays its history, and its next
// prompt carries the earlier turn to the model.
func TestLoadReplaysAndKeepsContext(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "todo", Args: args(map[string]any{"todos": []map[string]any{{"id": "1", "content": "say hi", "status": "in_progress"}}})}}},
		llmtest.Turn{Text: "hi there"},
		llmtest.Turn{Text: "you said hello"},
		llmtest.Turn{Text: "forked"},
	)
	c := w.connect(sdk.ClientCapabilities{})
	id := c.newSession(t, w.work)
	c.prompt(t, id, "hello")
	plan := false
	for _, n := range c.snapshot() {
		if p := n.Update.Plan; p != nil && len(p.Entries) == 1 && p.Entries[0].Content == "say hi" && p.Entries[0].Status == sdk.PlanEntryStatusInProgress {
			plan = true
		}
	}
	if !plan {
		t.Errorf("no plan update from the todo tool: %s", kindsOf(c.snapshot()))
	}

	c2 := w.connect(sdk.ClientCapabilities{})
	list, err := c2.conn.ListSessions(context.Background(), sdk.ListSessionsRequest{Cwd: sdk.Ptr(w.work)})
	if err != nil || len(list.Sessions) != 1 || string(list.Sessions[0].SessionId) != id {
		t.Fatalf("session/list = %+v, %v", list, err)
	}
	if _, err := c2.conn.LoadSession(context.Background(), sdk.LoadSessionRequest{SessionId: sdk.SessionId(id), Cwd: w.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	var user, agentSaid string
	tool := false
	for _, n := range c2.snapshot() {
		if u := n.Update.UserMessageChunk; u != nil {
			user += u.Content.Text.Text
		}
		if n.Update.ToolCall != nil && n.Update.ToolCall.Kind == sdk.ToolKindThink {
			tool = true
		}
	}
	agentSaid = agentText(c2.snapshot())
	if user != "hello" || agentSaid != "hi there" || !tool {
		t.Fatalf("replay: user %q, agent %q, tool call %v; updates %s", user, agentSaid, tool, kindsOf(c2.snapshot()))
	}
	if resp := c2.prompt(t, id, "what did I say?"); resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", resp.StopReason)
	}
	var body struct {
		Messages []llmtest.ChatMessage `json:"messages"`
	}
	if err := json.Unmarshal(w.srv.Requests()[2].Body, &body); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, m := range body.Messages {
		sent = append(sent, m.Role+":"+m.Text())
	}
	if got := strings.Join(sent, "|"); !strings.Contains(got, "user:hello") || !strings.Contains(got, "assistant:hi there") {
		t.Errorf("second prompt lost the context: %s", got)
	}

	// A fork is a new session with a copy of the history.
	fork, err := c2.conn.UnstableForkSession(context.Background(), sdk.UnstableForkSessionRequest{SessionId: sdk.SessionId(id), Cwd: w.work})
	if err != nil || fork.SessionId == "" || string(fork.SessionId) == id {
		t.Fatalf("fork = %+v, %v", fork, err)
	}
	c2.prompt(t, string(fork.SessionId), "and in the fork?")
	if body := string(w.srv.Requests()[3].Body); !strings.Contains(body, "what did I say?") || !strings.Contains(body, "you said hello") {
		t.Errorf("the fork lost the history: %s", body)
	}
}

// With fs capabilities the file tools read the editor's buffer and, in
// accept_edits mode, write through the editor without asking.
func TestFilesThroughClient(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file", Args: args(map[string]any{"path": "notes.md"})}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "write_file", Args: args(map[string]any{"path": "notes.md", "content": "new text\n"})}}},
		llmtest.Turn{Text: "ok"},
	)
	path := filepath.Join(w.work, "notes.md")
	if err := os.WriteFile(path, []byte("on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := w.connect(sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
	c.files[path] = "unsaved buffer\n"
	id := c.newSession(t, w.work)
	if _, err := c.conn.SetSessionMode(context.Background(), sdk.SetSessionModeRequest{SessionId: sdk.SessionId(id), ModeId: ModeAcceptEdits}); err != nil {
		t.Fatal(err)
	}
	c.prompt(t, id, "rewrite notes")
	if body := string(w.srv.Requests()[1].Body); !strings.Contains(body, "unsaved buffer") {
		t.Errorf("read_file did not read the editor's buffer: %s", body)
	}
	if c.written[path] != "new text\n" {
		t.Errorf("write_file did not write through the editor: %v", c.written)
	}
	if b, _ := os.ReadFile(path); string(b) != "on disk\n" {
		t.Errorf("the file on disk changed: %q", b)
	}
	if len(c.permissions) != 0 {
		t.Errorf("accept_edits asked %d times", len(c.permissions))
	}
}

// Resource links to local files and embedded resources are inlined into
// the user message; the legacy session/set_model switches the model.
func TestPromptResourcesAndModel(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "seen"})
	const key = "sk-test-0123456789abcdef"
	w.editConfig("  default: fake-model\n", "  default: fake-model\n  api_key: "+key+"\n")
	path := filepath.Join(w.work, "main.go")
	if err := os.WriteFile(path, []byte("package main // linked\nconst k = \""+key+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := w.connect(sdk.ClientCapabilities{})
	id := c.newSession(t, w.work)
	if _, err := c.conn.CallExtension(context.Background(), extSetModel, map[string]any{"sessionId": id, "modelId": "custom:other-model"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sdk.SessionId(id), Prompt: []sdk.ContentBlock{
		sdk.TextBlock("look"),
		sdk.ResourceLinkBlock("main.go", "file://"+path),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///tmp/x.txt", Text: "embedded words"}}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := w.srv.Requests()[0].JSON()
	body := string(w.srv.Requests()[0].Body)
	if !strings.Contains(body, "package main // linked") || !strings.Contains(body, "embedded words") {
		t.Errorf("resources not inlined: %s", body)
	}
	if strings.Contains(body, key) {
		t.Errorf("the provider key in an attached file reached the model: %s", body)
	}
	if req["model"] != "other-model" {
		t.Errorf("model %v, want other-model after session/set_model", req["model"])
	}
}

// A resource link to one of HERMES_HOME's credential stores (auth.json's
// OAuth tokens are not in the redactor), directly or through a symlink in
// the workspace, is named, not inlined: the tools may not read them
// either.
func TestPromptDoesNotInlineHermesSecrets(t *testing.T) {
	w := newWorld(t, llmtest.Turn{Text: "seen"})
	auth := filepath.Join(w.home, "auth.json")
	if err := os.WriteFile(auth, []byte(`{"refresh_token":"oauth-refresh-0123456789"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(w.work, "notes.md")
	if err := os.Symlink(auth, link); err != nil {
		t.Fatal(err)
	}
	c := w.connect(sdk.ClientCapabilities{})
	id := c.newSession(t, w.work)
	_, err := c.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sdk.SessionId(id), Prompt: []sdk.ContentBlock{
		sdk.TextBlock("look"), sdk.ResourceLinkBlock("auth.json", "file://"+auth), sdk.ResourceLinkBlock("notes.md", "file://"+link),
	}})
	if err != nil {
		t.Fatal(err)
	}
	body := string(w.srv.Requests()[0].Body)
	if strings.Contains(body, "oauth-refresh") {
		t.Errorf("HERMES_HOME/auth.json was inlined into the prompt: %s", body)
	}
	if !strings.Contains(body, "notes.md") {
		t.Errorf("the refused link is not named: %s", body)
	}
}

// The legacy method name is rewritten; other lines pass unchanged.
func TestRenameMethod(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":3,"method":"session/set_model","params":{"sessionId":"s","modelId":"a:b"}}`
	if got := string(renameMethod([]byte(in))); !strings.Contains(got, `"method":"`+extSetModel+`"`) || !strings.Contains(got, `"modelId":"a:b"`) {
		t.Errorf("renameMethod = %s", got)
	}
	other := `{"jsonrpc":"2.0","method":"session/update","params":{"text":"session/set_model"}}`
	if got := string(renameMethod([]byte(other))); got != other {
		t.Errorf("other line changed: %s", got)
	}
}
