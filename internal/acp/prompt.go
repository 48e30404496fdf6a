package acp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/workspacefile"
)

// Prompt runs one turn and streams its progress as session/update
// notifications, all of them before the response. session/cancel (the
// SDK cancels ctx) stops the turn and its running tool; the answer is
// then stopReason cancelled.
func (s *Server) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	as, err := s.session(string(p.SessionId))
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text := s.promptText(p.Prompt, as.cwd, as.rt.Home(), as.rt.Redactor().Redact)
	if strings.TrimSpace(text) == "" {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": "the prompt is empty: send at least one text block"})
	}
	if done, err := s.command(ctx, as, text); done || err != nil {
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, err
	}
	tc := newToolCalls(as)
	defer tc.clear()
	last, err := as.s.Ask(ctx, text, session.AskOptions{Subscribe: session.SubscribeOptions{MaxPendingDeltaBytes: -1, Approver: true}}, func(ev session.Event) {
		switch ev.Kind {
		case session.TextDelta:
			s.update(ctx, as.s.ID(), sdk.UpdateAgentMessageText(ev.Text))
		case session.ReasoningDelta:
			s.update(ctx, as.s.ID(), sdk.UpdateAgentThoughtText(ev.Text))
		case session.Notice:
			s.update(ctx, as.s.ID(), sdk.UpdateAgentThoughtText("\n"+ev.Text+"\n"))
		case session.ToolStart:
			s.update(ctx, as.s.ID(), tc.start(ev.CallID, ev.Tool, ev.Args))
		case session.ToolEnd:
			for _, u := range tc.end(ev.CallID, ev.Tool, ev.Args, ev.Text, ev.IsError) {
				s.update(ctx, as.s.ID(), u)
			}
		case session.ApprovalRequest:
			as.s.Approve(ev.Approval.ID, s.askCommand(ctx, as, tc, ev))
		case session.ClarifyRequest:
			s.askQuestion(ctx, as, tc, ev)
		}
	})
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	for _, u := range tc.abandon() {
		s.update(ctx, as.s.ID(), u)
	}
	return s.finish(ctx, as, last)
}

// finish turns a turn's last event into the prompt's answer.
func (s *Server) finish(ctx context.Context, as *acpSession, ev session.Event) (sdk.PromptResponse, error) {
	res := ev.Result
	if res.APICalls > 0 {
		s.sendUsage(ctx, as, res)
	}
	resp := sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn, Usage: usage(res.Usage)}
	switch {
	case ev.Kind == session.Error && (ev.Cancelled || errors.Is(ev.Err, agent.ErrCancelled)):
		resp.StopReason = sdk.StopReasonCancelled
	case ev.Kind == session.Error:
		s.opts.Logger.Warn("turn failed", "session", as.s.ID(), "err", ev.Err)
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": ev.Err.Error()})
	case res.Stopped == "max_turns":
		resp.StopReason = sdk.StopReasonMaxTurnRequests
	}
	return resp, nil
}

// sendUsage sends usage_update: the context in use, estimated as the
// turn's tokens per model call (the last call's prompt plus answer).
func (s *Server) sendUsage(ctx context.Context, as *acpSession, res agent.TurnResult) {
	u := res.Usage
	used := (u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens) / max(res.APICalls, 1)
	s.update(ctx, as.s.ID(), sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{
		SessionUpdate: "usage_update", Used: used, Size: as.rt.ContextWindow()}})
}

func usage(u llm.Usage) *sdk.Usage {
	out := &sdk.Usage{InputTokens: u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens, OutputTokens: u.OutputTokens}
	out.TotalTokens = out.InputTokens + out.OutputTokens
	if u.CacheReadTokens > 0 {
		out.CachedReadTokens = sdk.Ptr(u.CacheReadTokens)
	}
	if u.CacheWriteTokens > 0 {
		out.CachedWriteTokens = sdk.Ptr(u.CacheWriteTokens)
	}
	if u.ReasoningTokens > 0 {
		out.ThoughtTokens = sdk.Ptr(u.ReasoningTokens)
	}
	return out
}

// command answers the adapter's slash commands (/title, /usage); done is
// false for any other prompt.
func (s *Server) command(ctx context.Context, as *acpSession, text string) (done bool, err error) {
	name, arg, _ := strings.Cut(strings.TrimSpace(text), " ")
	id := as.s.ID()
	switch name {
	case "/title":
		arg = strings.TrimSpace(arg)
		if arg == "" {
			s.update(ctx, id, sdk.UpdateAgentMessageText("usage: /title TEXT"))
			return true, nil
		}
		if err := as.rt.Recorder().Ensure(ctx, id); err != nil {
			return true, sdk.NewInternalError(map[string]any{"error": err.Error()})
		}
		if err := as.rt.Store().SetTitle(ctx, id, arg); err != nil {
			s.update(ctx, id, sdk.UpdateAgentMessageText(err.Error()))
			return true, nil
		}
		s.update(ctx, id, sdk.UpdateAgentMessageText(fmt.Sprintf("Session %s is now titled %q.", id, arg)))
		return true, nil
	case "/usage":
		var u llm.Usage
		calls := 0
		if !as.rt.Recorder().Pending(id) {
			st, err := as.rt.Store().Session(ctx, id)
			if err != nil {
				return true, sdk.NewInternalError(map[string]any{"error": err.Error()})
			}
			u, calls = st.Usage, st.APICallCount
		}
		s.update(ctx, id, sdk.UpdateAgentMessageText(fmt.Sprintf("input %d · output %d · cache read %d · api calls %d",
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, calls)))
		return true, nil
	}
	return false, nil
}

// promptText renders a prompt's content blocks as one user message: text
// as is, embedded text resources and local file links inlined (up to
// MaxInlineBytes, with the process's secrets redacted: an attached .env
// does not carry its keys to the model; HERMES_HOME's credential stores,
// which the tools may not read either, are named only), other resources
// named.
func (s *Server) promptText(blocks []sdk.ContentBlock, cwd, hermesHome string, redact func(string) string) string {
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.ResourceLink != nil:
			parts = append(parts, redact(s.linkText(b.ResourceLink, cwd, hermesHome)))
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			parts = append(parts, redact(fileBlock(displayURI(r.Uri), capText(r.Text, s.opts.MaxInlineBytes))))
		case b.Resource != nil && b.Resource.Resource.BlobResourceContents != nil:
			r := b.Resource.Resource.BlobResourceContents
			parts = append(parts, fmt.Sprintf("[Attached binary resource %s (%s), not shown]", displayURI(r.Uri), deref(r.MimeType)))
		case b.Image != nil:
			parts = append(parts, "[An image was attached; this agent reads text only]")
		case b.Audio != nil:
			parts = append(parts, "[Audio was attached; this agent reads text only]")
		}
	}
	return strings.Join(parts, "\n\n")
}

// linkText inlines a file:// link's file when it is a small text file,
// else names it so the model can read it with its tools. A file inside
// the session's workspace cwd is read with a workspacefile.Reader on cwd
// (a link out of the workspace, planted by a command, is named, not
// read); one elsewhere is the person's own pick, read beneath "/". Either
// way HERMES_HOME's protected files are refused by device and inode, and
// FIFOs, devices and files over MaxInlineBytes are named, never read.
func (s *Server) linkText(l *sdk.ContentBlockResourceLink, cwd, hermesHome string) string {
	path, ok := filePath(l.Uri)
	if !ok {
		return fmt.Sprintf("[Resource %s: %s]", l.Name, l.Uri)
	}
	if hermesSecret(path, hermesHome) {
		return fmt.Sprintf("[File %s (one of hermes' credential files in HERMES_HOME, not shown)]", path)
	}
	root := "/"
	if rel, err := filepath.Rel(cwd, path); cwd != "" && err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		root = cwd
	}
	r, err := workspacefile.Open(root, hermesHome)
	if err != nil {
		return fmt.Sprintf("[File %s (could not be read: %v)]", path, err)
	}
	defer r.Close()
	data, err := r.ReadFile(path, s.opts.MaxInlineBytes)
	var re *workspacefile.RefusedError
	switch {
	case errors.As(err, &re) && re.Kind == workspacefile.Protected:
		return fmt.Sprintf("[File %s (one of hermes' credential files in HERMES_HOME, not shown)]", path)
	case errors.As(err, &re) && re.Kind == workspacefile.NotFile:
		return fmt.Sprintf("[Directory %s]", path)
	case errors.As(err, &re) && re.Kind == workspacefile.TooLarge:
		return fmt.Sprintf("[File %s (%s, too large to inline; read parts of it with read_file)]", path, strings.TrimPrefix(re.Reason, "is "))
	case errors.As(err, &re) && re.Kind == workspacefile.Special:
		return fmt.Sprintf("[File %s (%s, not shown)]", path, strings.TrimPrefix(re.Reason, "is "))
	case errors.As(err, &re):
		return fmt.Sprintf("[File %s (%s; not shown)]", path, strings.TrimPrefix(re.Reason, "is "))
	case err != nil:
		return fmt.Sprintf("[File %s (could not be read: %v)]", path, errors.Unwrap(err))
	}
	if strings.ContainsRune(string(data), 0) {
		return fmt.Sprintf("[File %s (binary, %d bytes, not shown)]", path, len(data))
	}
	return fileBlock(path, string(data))
}

// hermesSecret reports whether path, with its links resolved, is one of
// HERMES_HOME's protected entries (local.IsProtectedName) or inside one.
func hermesSecret(path, hermesHome string) bool {
	if hermesHome == "" {
		return false
	}
	home, err := filepath.EvalSymlinks(hermesHome)
	if err != nil {
		home = filepath.Clean(hermesHome)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = filepath.Clean(path)
	}
	rel, ok := strings.CutPrefix(real, home+string(filepath.Separator))
	return ok && local.IsProtectedName(strings.SplitN(rel, string(filepath.Separator), 2)[0])
}

// capText returns text cut to at most limit bytes at a rune boundary (a
// UTF-8 sequence is never split), followed by a line saying it was
// truncated and how many bytes are left out; text within limit is
// returned as is.
func capText(text string, limit int64) string {
	if int64(len(text)) <= limit {
		return text
	}
	n := int(limit)
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + fmt.Sprintf("\n[... truncated: %d more bytes not shown (over the %d-byte inline limit)]", len(text)-n, limit)
}

func fileBlock(name, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fmt.Sprintf("[File %s]\n%s\n%s%s", name, fence, text, fence)
}

// filePath returns the local path of a file:// URI.
func filePath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", false
	}
	return u.Path, true
}

func displayURI(uri string) string {
	if p, ok := filePath(uri); ok {
		return p
	}
	return uri
}

func deref(p *string) string {
	if p == nil {
		return "unknown type"
	}
	return *p
}
