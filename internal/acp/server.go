// Package acp is the Agent Client Protocol adapter (`hermes acp`,
// `hermes-acp`): editors (Zed, JetBrains, VS Code extensions) drive hermes
// sessions over JSON-RPC on stdio. It is a client of the session runtime
// (internal/session), like the CLI and the gateway: ACP sessions are
// state.db sessions with source "acp".
//
// Wire: github.com/coder/acp-go-sdk, protocol version 1
// (https://agentclientprotocol.com). stdout carries only the protocol.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/tool"
)

// Source is the state.db source of sessions created over ACP.
const Source = "acp"

// DefaultMaxInlineBytes is the largest local file a prompt's resource
// link is inlined from.
const DefaultMaxInlineBytes = 256 << 10

// Options configures a Server.
type Options struct {
	// NewRuntime starts the session runtime for the workspace cwd
	// (absolute), with files as the file tools' access to the editor.
	NewRuntime func(ctx context.Context, cwd string, files tool.FileAccess) (*session.Runtime, error)
	// Logger receives diagnostics (never stdout); nil discards them.
	Logger *slog.Logger
	// Version is reported as agentInfo.version.
	Version string
	// Now is the clock (session list timestamps).
	Now func() time.Time
	// Cwd is the process's working directory: the workspace whose runtime
	// answers session/list before any session is open and without a cwd.
	Cwd string
	// MaxInlineBytes caps a file:// resource link inlined into a prompt;
	// 0 = DefaultMaxInlineBytes.
	MaxInlineBytes int64
	// PermissionTimeout bounds a wait for the client's answer to an edit
	// permission request (commands use approvals.timeout); 0 = 5 minutes.
	PermissionTimeout time.Duration
	// MaxRuntimes bounds the workspaces whose runtime stays started; past
	// it the least recently used runtime without an open session is
	// closed (see Server.runtime); 0 = DefaultMaxRuntimes.
	MaxRuntimes int
}

// Server is one ACP connection's agent. Its methods are called by the SDK,
// concurrently.
type Server struct {
	opts Options
	conn *sdk.AgentSideConnection
	out  *hookWriter
	in   *input

	mu       sync.Mutex
	caps     sdk.ClientCapabilities
	runtimes map[string]*rtEntry    // by workspace cwd
	sessions map[string]*acpSession // by session id
	tick     uint64                 // runtime use counter (LRU order)
	// mcpAlways holds the editor-supplied MCP servers the person allowed
	// always (mcpGrant), for this process.
	mcpAlways map[string]bool
}

// New returns a server for o; Serve runs it.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxInlineBytes <= 0 {
		o.MaxInlineBytes = DefaultMaxInlineBytes
	}
	if o.PermissionTimeout <= 0 {
		o.PermissionTimeout = 5 * time.Minute
	}
	if o.MaxRuntimes <= 0 {
		o.MaxRuntimes = DefaultMaxRuntimes
	}
	return &Server{opts: o, runtimes: map[string]*rtEntry{}, sessions: map[string]*acpSession{}, mcpAlways: map[string]bool{}}
}

// Serve speaks ACP on in/out until the client disconnects (in ends: the
// requests received before are answered first, see input) or ctx ends,
// then closes every session and runtime.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	s.in = newInput()
	defer close(s.in.quit)
	s.out = &hookWriter{w: out, in: s.in}
	// The SDK starts reading at once; SetLogger and s.conn are unguarded
	// fields its reader and our handlers use, so nothing is read before
	// both are set (the race detector saw a quick disconnect log through
	// the logger while SetLogger wrote it).
	gate := &gatedReader{r: s.in.read(in), open: make(chan struct{})}
	s.conn = sdk.NewAgentSideConnection(s, s.out, gate)
	s.conn.SetLogger(s.opts.Logger)
	close(gate.open)
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
	}
	return s.Close()
}

// gatedReader reads from r once open is closed.
type gatedReader struct {
	r    io.Reader
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// Close closes the sessions and runtimes (running turns are cancelled;
// stored sessions stay resumable).
func (s *Server) Close() error {
	s.mu.Lock()
	rts := s.runtimes
	s.runtimes = map[string]*rtEntry{}
	s.sessions = map[string]*acpSession{}
	s.mu.Unlock()
	var errs []error
	for _, e := range rts {
		errs = append(errs, e.rt.Close())
	}
	return errors.Join(errs...)
}

// Initialize negotiates protocol version 1 and advertises what hermes does.
func (s *Server) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	s.mu.Lock()
	s.caps = p.ClientCapabilities
	s.mu.Unlock()
	s.opts.Logger.Info("initialize", "client_protocol", p.ProtocolVersion, "fs_read", p.ClientCapabilities.Fs.ReadTextFile,
		"fs_write", p.ClientCapabilities.Fs.WriteTextFile)
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentInfo:       &sdk.Implementation{Name: "hermes", Title: sdk.Ptr("Hermes"), Version: s.opts.Version},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true},
			McpCapabilities:    sdk.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: sdk.SessionCapabilities{
				List: &sdk.SessionListCapabilities{}, Resume: &sdk.SessionResumeCapabilities{},
				Close: &sdk.SessionCloseCapabilities{}, Fork: &sdk.SessionForkCapabilities{},
			},
		},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate accepts any method: hermes reads its provider keys from
// HERMES_HOME, not from the client.
func (s *Server) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// Logout has nothing to forget.
func (s *Server) Logout(context.Context, sdk.LogoutRequest) (sdk.LogoutResponse, error) {
	return sdk.LogoutResponse{}, nil
}

// HandleExtensionMethod serves the legacy session/set_model (renamed on
// the way in, see input.read).
func (s *Server) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != extSetModel {
		return nil, sdk.NewMethodNotFound(method)
	}
	var p struct {
		SessionID string `json:"sessionId"`
		ModelID   string `json:"modelId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	as, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	if err := setModel(ctx, as, p.ModelID); err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return map[string]any{}, nil
}

// session returns the open session id.
func (s *Server) session(id string) (*acpSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if as, ok := s.sessions[id]; ok {
		return as, nil
	}
	return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("session %q is not open on this connection: load or resume it first", id)})
}

// clientCaps is the client's capabilities from initialize.
func (s *Server) clientCaps() sdk.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// update sends one session/update; a failure (client gone) is logged.
func (s *Server) update(ctx context.Context, sessionID string, u sdk.SessionUpdate) {
	err := s.conn.SessionUpdate(context.WithoutCancel(ctx), sdk.SessionNotification{SessionId: sdk.SessionId(sessionID), Update: u})
	if err != nil {
		s.opts.Logger.Warn("session/update not sent", "session", sessionID, "err", err)
	}
}

// setModel switches the session's model: MODEL, or PROVIDER:MODEL naming
// the runtime's provider (a session keeps its provider).
func setModel(ctx context.Context, as *acpSession, value string) error {
	model := strings.TrimSpace(value)
	if prov, m, ok := strings.Cut(model, ":"); ok && slices.Contains(providers.Names(), strings.ToLower(prov)) {
		if !strings.EqualFold(prov, as.rt.ProviderName()) {
			return fmt.Errorf("model %q is on provider %s, but this session uses %s; pick a model of %s", value, prov, as.rt.ProviderName(), as.rt.ProviderName())
		}
		model = m
	}
	if model == "" {
		return errors.New("the model name is empty: send MODEL or PROVIDER:MODEL")
	}
	return as.s.SetModel(ctx, model)
}
