package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/session"
)

// Permission option ids; the client answers with one of them.
const (
	optOnce    = "allow_once"
	optSession = "allow_session"
	optAlways  = "allow_always"
	optDeny    = "deny"
)

// commandOptions are offered for a dangerous command, as the CLI's prompt.
var commandOptions = []sdk.PermissionOption{
	{OptionId: optOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: optSession, Name: "Allow for this session", Kind: sdk.PermissionOptionKindAllowAlways},
	{OptionId: optAlways, Name: "Always allow (saved to approvals.command_allowlist)", Kind: sdk.PermissionOptionKindAllowAlways},
	{OptionId: optDeny, Name: "Deny", Kind: sdk.PermissionOptionKindRejectOnce},
}

// editOptions are offered for a file edit.
var editOptions = []sdk.PermissionOption{
	{OptionId: optOnce, Name: "Allow this edit", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: optDeny, Name: "Deny", Kind: sdk.PermissionOptionKindRejectOnce},
}

// askCommand answers an approval request of the runtime (a dangerous
// command) with session/request_permission. The request is withdrawn
// when the approval ends first (approvals.timeout, cancel); a client that
// disconnects or answers "cancelled" denies.
func (s *Server) askCommand(ctx context.Context, as *acpSession, tc *toolCalls, ev session.Event) approval.Answer {
	if as.getMode() == ModeYolo {
		return approval.Once
	}
	p := ev.Approval
	rctx, cancel := s.in.clientCtx(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		select {
		case <-ev.ApprovalDone:
			cancel()
		case <-rctx.Done():
		}
	}()
	call := lastOpen(tc)
	if id, _ := as.openCall(p.Tool); id != "" {
		call = id
	}
	// The update keeps the call's title (the command) and shows why it
	// needs approval; the result replaces this content.
	what := "$ " + p.Command
	if p.Command == "" {
		what = fmt.Sprintf("%s %s %s", p.Tool, p.Action, p.Path)
	}
	resp, err := s.conn.RequestPermission(rctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(as.s.ID()), Options: commandOptions,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(call), Kind: sdk.Ptr(sdk.ToolKindExecute), Status: sdk.Ptr(sdk.ToolCallStatusPending),
			Content:  []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(what + "\n\n" + approvalWhy(p.Danger)))},
			RawInput: map[string]any{"command": p.Command, "reason": p.Reason, "rule": p.Rule}},
	})
	if err != nil {
		s.opts.Logger.Info("permission request ended without an answer: denied", "session", as.s.ID(), "err", err)
		return approval.Deny
	}
	switch selected(resp) {
	case optOnce:
		return approval.Once
	case optSession:
		return approval.Session
	case optAlways:
		return approval.Always
	}
	return approval.Deny
}

func lastOpen(tc *toolCalls) string {
	if len(tc.open) == 0 {
		return "permission"
	}
	return tc.open[len(tc.open)-1]
}

func selected(r sdk.RequestPermissionResponse) string {
	if r.Outcome.Selected == nil {
		return "" // cancelled
	}
	return string(r.Outcome.Selected.OptionId)
}

// errEditDenied is what the model reads when the person refused an edit.
var errEditDenied = errors.New("the user denied this edit in the editor; do not retry it unless the user asks for it")

// fileAccess is the file tools' access to the editor (tool.FileAccess):
// reads and writes go through the client's fs methods when it offers them
// and the backend is local (paths are the editor's), and every edit is
// asked first unless the session mode, approvals.mode off or an isolated
// backend (the box) says otherwise (as the CLI decides commands).
type fileAccess struct{ s *Server }

// ReadTextFile reads through fs/read_text_file (unsaved buffers).
func (f fileAccess) ReadTextFile(ctx context.Context, sessionID, abs string) (string, bool, error) {
	as, err := f.s.session(sessionID)
	if err != nil || !f.s.clientCaps().Fs.ReadTextFile || as.rt.BackendKind() != "local" {
		return "", false, nil
	}
	ctx, cancel := f.s.in.clientCtx(ctx)
	defer cancel()
	resp, err := f.s.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sdk.SessionId(sessionID), Path: abs})
	if err != nil {
		return "", false, nil // not open there or unreadable: the backend reports it
	}
	return resp.Content, true, nil
}

// WriteTextFile asks for the edit, then writes through fs/write_text_file
// when the client offers it.
func (f fileAccess) WriteTextFile(ctx context.Context, sessionID, toolName, abs, oldText, newText string) (bool, error) {
	as, err := f.s.session(sessionID)
	if err != nil {
		return false, nil // not an ACP session of this connection
	}
	if f.needsAsking(as) {
		if !f.s.askEdit(ctx, as, toolName, abs, oldText, newText) {
			return false, errEditDenied
		}
	}
	if !f.s.clientCaps().Fs.WriteTextFile || as.rt.BackendKind() != "local" {
		return false, nil
	}
	ctx, cancel := f.s.in.clientCtx(ctx)
	defer cancel()
	if _, err := f.s.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(sessionID), Path: abs, Content: newText}); err != nil {
		return false, fmt.Errorf("the editor could not write %s: %v", abs, err)
	}
	return true, nil
}

func (f fileAccess) needsAsking(as *acpSession) bool {
	mode := as.getMode()
	return mode == ModeDefault && !strings.EqualFold(as.rt.Config().Approvals.Mode, "off") && !as.rt.Isolated()
}

// askEdit asks the client to allow one edit; no answer within
// PermissionTimeout, a cancelled turn or a disconnect deny it.
func (s *Server) askEdit(ctx context.Context, as *acpSession, toolName, abs, oldText, newText string) bool {
	ctx, cancel := context.WithTimeout(ctx, s.opts.PermissionTimeout)
	defer cancel()
	ctx, stop := s.in.clientCtx(ctx)
	defer stop()
	// The tool_call is sent by the prompt loop; wait for it so that the
	// request refers to a call the client knows.
	call := ""
	for call == "" {
		id, changed := as.openCall(toolName)
		if id != "" {
			call = id
			break
		}
		select {
		case <-changed:
		case <-time.After(2 * time.Second):
			call = "edit"
		case <-ctx.Done():
			return false
		}
	}
	var old []string
	if oldText != "" {
		old = []string{oldText}
	}
	resp, err := s.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(as.s.ID()), Options: editOptions,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(call), Kind: sdk.Ptr(sdk.ToolKindEdit),
			Status:    sdk.Ptr(sdk.ToolCallStatusPending),
			Content:   []sdk.ToolCallContent{sdk.ToolDiffContent(abs, newText, old...)},
			Locations: []sdk.ToolCallLocation{{Path: abs}}},
	})
	if err != nil {
		s.opts.Logger.Info("edit permission ended without an answer: denied", "session", as.s.ID(), "path", abs, "err", err)
		return false
	}
	return selected(resp) == optOnce
}

// approvalWhy is the line of a permission request saying why a command
// needs approval: the approval service's reason already starts with
// "needs approval: ", which is shown once.
func approvalWhy(danger string) string {
	if rest, ok := strings.CutPrefix(danger, "needs approval: "); ok {
		danger = rest
	}
	return "Needs approval: " + danger
}
