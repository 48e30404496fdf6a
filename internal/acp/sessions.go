package acp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/store"
)

// Session modes (session/set_mode): how much the client is asked.
const (
	// ModeDefault asks before dangerous commands and file edits.
	ModeDefault = "default"
	// ModeAcceptEdits edits files without asking; dangerous commands ask.
	ModeAcceptEdits = "accept_edits"
	// ModeYolo runs everything without asking; the hardline list and
	// approvals.deny still block.
	ModeYolo = "yolo"
)

// listPageSize is how many sessions one session/list page holds.
const listPageSize = 50

// acpSession is an open session of this connection.
type acpSession struct {
	s   *session.Session
	rt  *session.Runtime
	cwd string

	mu   sync.Mutex
	mode string
	// calls are the tool calls of the running prompt that were announced
	// (tool_call sent) and have not ended, by tool name, newest last.
	calls   map[string][]string
	changed chan struct{} // closed and replaced when calls changes
}

func newACPSession(s *session.Session, rt *session.Runtime, cwd string) *acpSession {
	return &acpSession{s: s, rt: rt, cwd: cwd, mode: ModeDefault,
		calls: map[string][]string{}, changed: make(chan struct{})}
}

func (as *acpSession) getMode() string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.mode
}

// NewSession creates a session in the workspace cwd.
func (s *Server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	rt, release, err := s.runtime(ctx, p.Cwd)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	defer release()
	gate := newMCPGate()
	sess, err := rt.Open(ctx, session.OpenOptions{Source: Source, Platform: Source, MCPServers: s.mcpServers(p.McpServers),
		PermitMCP: s.permit(gate)})
	if err != nil {
		gate.open(nil)
		return sdk.NewSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	as := s.register(sess, rt, p.Cwd)
	// Sent once the response is out: clients drop updates (and
	// permission requests) of a session they do not know yet.
	s.out.after(`"sessionId":"`+sess.ID()+`"`, func() {
		s.sendCommands(context.Background(), as)
		gate.open(as)
	})
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(sess.ID()), Modes: modeState(ModeDefault),
		ConfigOptions: s.configOptions(as)}, nil
}

// LoadSession reopens a stored session and replays its history as
// session/update notifications before answering.
func (s *Server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	as, err := s.reopen(ctx, string(p.SessionId), p.Cwd, p.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	history, err := as.rt.Store().Messages(ctx, as.s.ID())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return sdk.LoadSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	s.replay(ctx, as, history)
	s.sendCommands(ctx, as)
	return sdk.LoadSessionResponse{Modes: modeState(as.getMode()), ConfigOptions: s.configOptions(as)}, nil
}

// ResumeSession reopens a stored session without replaying it.
func (s *Server) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	as, err := s.reopen(ctx, string(p.SessionId), p.Cwd, p.McpServers)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	// The marker lets the hook find this response (it names no session).
	marker := "hermes/resumed:" + as.s.ID()
	s.out.after(marker, func() { s.sendCommands(context.Background(), as) })
	return sdk.ResumeSessionResponse{Meta: map[string]any{marker: true}, Modes: modeState(as.getMode()),
		ConfigOptions: s.configOptions(as)}, nil
}

// reopen opens the stored session id in the runtime of cwd.
func (s *Server) reopen(ctx context.Context, id, cwd string, mcp []sdk.McpServer) (*acpSession, error) {
	if as, err := s.session(id); err == nil {
		if as.cwd == cwd {
			return as, nil
		}
		s.forget(id)
		_ = as.s.Close()
	}
	rt, release, err := s.runtime(ctx, cwd)
	if err != nil {
		return nil, err
	}
	defer release()
	// The client named the session it loads: its servers may be asked
	// about at once.
	gate := newMCPGate()
	sess, err := rt.Open(ctx, session.OpenOptions{Resume: id, Source: Source, Platform: Source, MCPServers: s.mcpServers(mcp),
		PermitMCP: s.permit(gate)})
	if errors.Is(err, store.ErrNotFound) {
		gate.open(nil)
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no stored session %q (session/list shows them)", id)})
	}
	if err != nil {
		gate.open(nil)
		return nil, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	as := s.register(sess, rt, cwd)
	gate.open(as)
	return as, nil
}

// mcpServers converts the client's MCP servers for a session, logging
// (names only) those it leaves out.
func (s *Server) mcpServers(in []sdk.McpServer) map[string]config.MCPServer {
	servers, skipped := clientMCPServers(in)
	if len(skipped) > 0 {
		s.opts.Logger.Warn("client MCP servers of an unsupported transport left out", "servers", skipped)
	}
	return servers
}

func (s *Server) register(sess *session.Session, rt *session.Runtime, cwd string) *acpSession {
	as := newACPSession(sess, rt, cwd)
	s.mu.Lock()
	s.sessions[sess.ID()] = as
	s.mu.Unlock()
	return as
}

func (s *Server) forget(id string) {
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
}

// CloseSession cancels the session's work and frees it; it stays stored.
func (s *Server) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	as, err := s.session(string(p.SessionId))
	if err != nil {
		return sdk.CloseSessionResponse{}, err
	}
	s.forget(as.s.ID())
	_ = as.s.Close()
	return sdk.CloseSessionResponse{}, nil
}

// Cancel stops the session's running turn (its prompt answers cancelled).
func (s *Server) Cancel(_ context.Context, p sdk.CancelNotification) error {
	as, err := s.session(string(p.SessionId))
	if err != nil {
		return nil // nothing runs there
	}
	as.s.Cancel()
	return nil
}

// ListSessions lists stored sessions (every source: a terminal session can
// be continued from the editor), newest first, listPageSize per page; the
// cursor is the offset of the next page.
func (s *Server) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	offset := 0
	if p.Cursor != nil {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil || n < 0 {
			return sdk.ListSessionsResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cursor %q is not one this agent returned", *p.Cursor)})
		}
		offset = n
	}
	st, release, err := s.anyStore(ctx, p.Cwd)
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	defer release()
	want := offset + listPageSize + 1
	if p.Cwd != nil {
		want = 10_000 // filtered here: read enough rows to fill the page
	}
	rows, err := st.List(ctx, store.ListOptions{Limit: want, NonEmpty: true})
	if err != nil {
		return sdk.ListSessionsResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	if p.Cwd != nil {
		kept := rows[:0]
		for _, r := range rows {
			if r.Cwd == *p.Cwd {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for i := offset; i < len(rows) && i < offset+listPageSize; i++ {
		out.Sessions = append(out.Sessions, sessionInfo(rows[i]))
	}
	if len(rows) > offset+listPageSize {
		out.NextCursor = sdk.Ptr(strconv.Itoa(offset + listPageSize))
	}
	return out, nil
}

// anyStore is the state.db of any runtime (they share HERMES_HOME),
// starting one for cwd (or the process's cwd) when none is started; the
// caller calls release when done with it.
func (s *Server) anyStore(ctx context.Context, cwd *string) (store.Store, func(), error) {
	s.mu.Lock()
	for _, e := range s.runtimes {
		s.tick++
		e.used, e.users = s.tick, e.users+1
		s.mu.Unlock()
		return e.rt.Store(), s.releaser(e), nil
	}
	s.mu.Unlock()
	dir := s.opts.Cwd
	if cwd != nil {
		dir = *cwd
	}
	rt, release, err := s.runtime(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	return rt.Store(), release, nil
}

func sessionInfo(r store.Session) sdk.SessionInfo {
	title := r.Title
	if title == "" {
		title = r.Preview
	}
	info := sdk.SessionInfo{SessionId: sdk.SessionId(r.ID), Cwd: r.Cwd,
		UpdatedAt: sdk.Ptr(r.UpdatedAt.UTC().Format(time.RFC3339))}
	if title != "" {
		info.Title = sdk.Ptr(title)
	}
	return info
}

// SetSessionMode switches what the session asks the client (see ModeDefault).
func (s *Server) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	as, err := s.session(string(p.SessionId))
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	switch string(p.ModeId) {
	case ModeDefault, ModeAcceptEdits, ModeYolo:
	default:
		return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown mode %q: use %s, %s or %s", p.ModeId, ModeDefault, ModeAcceptEdits, ModeYolo)})
	}
	as.mu.Lock()
	as.mode = string(p.ModeId)
	as.mu.Unlock()
	return sdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption sets the "model" option (MODEL or PROVIDER:MODEL).
func (s *Server) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "only the select option \"model\" can be set"})
	}
	as, err := s.session(string(v.SessionId))
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	if v.ConfigId != configModel {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown config option %q: hermes has %q", v.ConfigId, configModel)})
	}
	if err := setModel(ctx, as, string(v.Value)); err != nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions(as)}, nil
}

// configModel is the id of the model choice.
const configModel = "model"

// configOptions are the session's options: the model, with the runtime's
// default and the session's current choice. With no model known (no
// model.default in config.yaml) there is no model option: an option with
// an empty name and value offers nothing to choose.
func (s *Server) configOptions(as *acpSession) []sdk.SessionConfigOption {
	cur, def := as.s.Model(), as.rt.Model()
	if cur == "" {
		cur = def
	}
	if cur == "" {
		return nil
	}
	opts := sdk.SessionConfigSelectOptionsUngrouped{{Name: cur, Value: sdk.SessionConfigValueId(cur)}}
	if def != "" && def != cur {
		opts = append(opts, sdk.SessionConfigSelectOption{Name: def, Value: sdk.SessionConfigValueId(def)})
	}
	return []sdk.SessionConfigOption{{Select: &sdk.SessionConfigOptionSelect{
		Id: configModel, Name: "Model", Type: "select", CurrentValue: sdk.SessionConfigValueId(cur),
		Category:    sdk.Ptr(sdk.SessionConfigOptionCategory("model")),
		Description: sdk.Ptr("The model of this session's next turns (MODEL or PROVIDER:MODEL)"),
		Options:     sdk.SessionConfigSelectOptions{Ungrouped: &opts},
	}}}
}

func modeState(cur string) *sdk.SessionModeState {
	return &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(cur), AvailableModes: []sdk.SessionMode{
		{Id: ModeDefault, Name: "Ask", Description: sdk.Ptr("Ask before dangerous commands and file edits")},
		{Id: ModeAcceptEdits, Name: "Accept edits", Description: sdk.Ptr("Edit files without asking; ask before dangerous commands")},
		{Id: ModeYolo, Name: "Yolo", Description: sdk.Ptr("Run everything without asking (the hardline list and approvals.deny still block)")},
	}}
}

// Slash commands the adapter answers itself (available_commands_update).
var commands = []sdk.AvailableCommand{
	{Name: "title", Description: "Set the session's title (shown by `hermes sessions list`)",
		Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "title"}}},
	{Name: "usage", Description: "Show the session's token usage"},
}

func (s *Server) sendCommands(ctx context.Context, as *acpSession) {
	s.update(ctx, as.s.ID(), sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{
		SessionUpdate: "available_commands_update", AvailableCommands: commands}})
}

// UnstableForkSession starts a new session holding a copy of a stored
// session's history (session/fork, unstable in ACP).
func (s *Server) UnstableForkSession(ctx context.Context, p sdk.UnstableForkSessionRequest) (sdk.UnstableForkSessionResponse, error) {
	rt, release, err := s.runtime(ctx, p.Cwd)
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, err
	}
	defer release()
	src, err := rt.Store().Resolve(ctx, string(p.SessionId))
	if errors.Is(err, store.ErrNotFound) {
		return sdk.UnstableForkSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no stored session %q (session/list shows them)", p.SessionId)})
	}
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	history, err := rt.Store().Messages(ctx, src.ID)
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	sess, err := rt.Open(ctx, session.OpenOptions{Source: Source, Platform: Source, History: history})
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	as := s.register(sess, rt, p.Cwd)
	s.out.after(`"sessionId":"`+sess.ID()+`"`, func() { s.sendCommands(context.Background(), as) })
	return sdk.UnstableForkSessionResponse{SessionId: sdk.SessionId(sess.ID()), Modes: modeState(ModeDefault)}, nil
}
