package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/tool"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// world is one test's HERMES_HOME, workspace and fake model server (the
// only fake: the network edge).
type world struct {
	t    testing.TB
	srv  *llmtest.Server
	home string
	work string
	// maxRuntimes is Options.MaxRuntimes of the servers connect starts.
	maxRuntimes int
	// replay is session.Options.ReplayPath (--replay) of its runtimes.
	replay string
}

func newWorld(t testing.TB, turns ...llmtest.Turn) *world {
	t.Helper()
	w := &world{t: t, srv: llmtest.NewServer(t, turns...), home: t.TempDir(), work: t.TempDir()}
	cfg := "model:\n  provider: custom\n  default: fake-model\n  base_url: " + w.srv.URL + "\n" +
		"compression:\n  enabled: false\napprovals:\n  timeout: 30\n"
	if err := os.WriteFile(filepath.Join(w.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// newRuntime is Options.NewRuntime for the world.
func (w *world) newRuntime(ctx context.Context, cwd string, files tool.FileAccess) (*session.Runtime, error) {
	getenv := func(k string) string {
		if k == "HERMES_HOME" {
			return w.home
		}
		return ""
	}
	loaded, err := config.Load(w.home, config.LoadOptions{Getenv: getenv})
	if err != nil {
		return nil, err
	}
	if err := loaded.Override("terminal.cwd", cwd); err != nil {
		return nil, err
	}
	return session.New(ctx, session.Options{Config: loaded, Home: w.home, UserHome: w.t.TempDir(),
		Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} }, Platform: Source, Files: files, ReplayPath: w.replay,
		Lock: session.WaitLock("acp test", nil)})
}

// client is a fake editor: it records what the agent sends and answers
// permission requests with answer.
type client struct {
	conn *sdk.ClientSideConnection
	wire *lines  // the agent's output, line by line
	srv  *Server // the agent side

	mu          sync.Mutex
	updates     []sdk.SessionNotification
	permissions []sdk.RequestPermissionRequest
	answer      func(sdk.RequestPermissionRequest) string // option id; "" = cancelled
	// elicit answers elicitation/create (a clarify question as a form): the
	// answer text, "" = declined.
	elicit     func(sdk.UnstableCreateElicitationRequest) string
	files      map[string]string // editor buffers, by path
	written    map[string]string
	disconnect func()        // closes the client's side and waits for Serve
	seen       chan struct{} // signalled on every update
}

// connect starts a server for w and a client on pipes; caps are the
// client's capabilities. The connection closes when the test ends.
func (w *world) connect(caps sdk.ClientCapabilities) *client {
	w.t.Helper()
	c := &client{wire: &lines{}, files: map[string]string{}, written: map[string]string{}, seen: make(chan struct{}, 1),
		answer: func(sdk.RequestPermissionRequest) string { return optDeny }}
	toAgent, clientOut := io.Pipe()
	clientIn, fromAgent := io.Pipe()
	srv := New(Options{NewRuntime: w.newRuntime, Logger: slog.New(slog.NewTextHandler(testWriter{w.t}, nil)), Version: "test",
		MaxRuntimes: w.maxRuntimes})
	c.srv = srv
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), toAgent, io.MultiWriter(fromAgent, c.wire)) }()
	c.conn = sdk.NewClientSideConnection(c, clientOut, clientIn)
	c.conn.SetLogger(slog.New(slog.NewTextHandler(testWriter{w.t}, nil)))
	var once sync.Once
	c.disconnect = func() {
		once.Do(func() {
			clientOut.Close()
			select {
			case err := <-served:
				if err != nil {
					w.t.Errorf("Serve: %v", err)
				}
			case <-time.After(30 * time.Second):
				w.t.Errorf("Serve did not return after the client disconnected")
			}
			fromAgent.Close()
		})
	}
	w.t.Cleanup(c.disconnect)
	ctx := context.Background()
	if _, err := c.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		w.t.Fatal(err)
	}
	return c
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// lines records a stream of JSON-RPC lines.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.buf.String()), "\n")
}

func (c *client) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.permissions = append(c.permissions, p)
	answer := c.answer
	c.mu.Unlock()
	id := answer(p)
	if id == "" {
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: sdk.PermissionOptionId(id)}}}, nil
}

func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	select {
	case c.seen <- struct{}{}:
	default:
	}
	return nil
}

func (c *client) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	text, ok := c.files[p.Path]
	if !ok {
		return sdk.ReadTextFileResponse{}, sdk.NewInvalidParams(map[string]any{"error": "not open"})
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

func (c *client) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[p.Path] = p.Content
	return sdk.WriteTextFileResponse{}, nil
}

func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}
func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}
func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}
func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}

// snapshot returns the updates received so far.
func (c *client) snapshot() []sdk.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionNotification(nil), c.updates...)
}

// waitFor waits until an update satisfies ok (the agent sends it on its
// own schedule, e.g. after a response); it fails the test after 30 s.
func (c *client) waitFor(t testing.TB, what string, ok func(sdk.SessionUpdate) bool) {
	t.Helper()
	deadline := time.After(time.Until(waitfor.Deadline(t)))
	for {
		for _, n := range c.snapshot() {
			if ok(n.Update) {
				return
			}
		}
		select {
		case <-c.seen:
		case <-deadline:
			t.Fatalf("no %s update within 30 s; got %s", what, kindsOf(c.snapshot()))
		}
	}
}

// kindsOf lists the update kinds, for failure messages.
func kindsOf(ns []sdk.SessionNotification) string {
	var out []string
	for _, n := range ns {
		b, _ := json.Marshal(n.Update)
		var m struct {
			Kind string `json:"sessionUpdate"`
		}
		_ = json.Unmarshal(b, &m)
		out = append(out, m.Kind)
	}
	return strings.Join(out, " ")
}

// newSession opens a session in the world's workspace.
func (c *client) newSession(t testing.TB, cwd string) string {
	t.Helper()
	resp, err := c.conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return string(resp.SessionId)
}

// prompt sends text and returns the answer.
func (c *client) prompt(t testing.TB, id, text string) sdk.PromptResponse {
	t.Helper()
	resp, err := c.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sdk.SessionId(id), Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return resp
}

// args renders tool arguments as JSON.
func args(v map[string]any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// agentText joins the agent_message_chunk texts.
func agentText(ns []sdk.SessionNotification) string {
	var b strings.Builder
	for _, n := range ns {
		if u := n.Update.AgentMessageChunk; u != nil && u.Content.Text != nil {
			b.WriteString(u.Content.Text.Text)
		}
	}
	return b.String()
}
