package acp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/session"
)

// clarifyField is the one field of the elicitation form a clarify
// question asks for.
const clarifyField = "answer"

// askQuestion puts a clarify question to the person in the editor: as a
// form (elicitation/create, when the client declares elicitation.form),
// else as session/request_permission with one option per choice (a
// question with choices), else it is declined: an open question needs a
// place to type and the client offers none. A withdrawn question (the
// turn ended, clarify_timeout) cancels the request.
func (s *Server) askQuestion(ctx context.Context, as *acpSession, tc *toolCalls, ev session.Event) {
	q := ev.Question
	rctx, cancel := s.in.clientCtx(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		select {
		case <-ev.ApprovalDone:
			cancel()
		case <-rctx.Done():
		}
	}()
	answer, ok := "", false
	switch caps := s.clientCaps(); {
	case caps.Elicitation != nil && caps.Elicitation.Form != nil:
		answer, ok = s.elicit(rctx, as, q)
	case len(q.Choices) > 0:
		answer, ok = s.choose(rctx, as, tc, q)
	}
	if !ok {
		as.s.Decline(q.ID)
		return
	}
	as.s.Answer(q.ID, answer)
}

// elicit asks q as a one-field form; the choices are offered as the
// field's suggestions (oneOf would forbid an answer of the person's own).
func (s *Server) elicit(ctx context.Context, as *acpSession, q *session.Question) (string, bool) {
	desc := "Your answer"
	if len(q.Choices) > 0 {
		var b strings.Builder
		for i, c := range q.Choices {
			fmt.Fprintf(&b, "\n%d. %s", i+1, c)
		}
		desc = "A number from the list or your own answer:" + b.String()
	}
	form := &sdk.UnstableCreateElicitationForm{Mode: "form", Message: q.Question,
		Meta: map[string]any{"sessionId": as.s.ID()},
		RequestedSchema: sdk.UnstableElicitationSchema{Type: "object", Required: []string{clarifyField},
			Properties: map[string]any{clarifyField: map[string]any{"type": "string", "title": "Answer", "description": desc}}}}
	resp, err := s.conn.UnstableCreateElicitation(ctx, sdk.UnstableCreateElicitationRequest{Form: form})
	if err != nil || resp.Accept == nil {
		return "", false
	}
	text, _ := resp.Accept.Content[clarifyField].(string)
	return text, strings.TrimSpace(text) != ""
}

// choose asks q as a permission request whose options are its choices.
func (s *Server) choose(ctx context.Context, as *acpSession, tc *toolCalls, q *session.Question) (string, bool) {
	opts := make([]sdk.PermissionOption, len(q.Choices))
	for i, c := range q.Choices {
		opts[i] = sdk.PermissionOption{OptionId: sdk.PermissionOptionId("choice_" + strconv.Itoa(i+1)), Name: c, Kind: sdk.PermissionOptionKindAllowOnce}
	}
	resp, err := s.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(as.s.ID()), Options: opts,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(lastOpen(tc)), Title: sdk.Ptr(q.Question),
			Status:  sdk.Ptr(sdk.ToolCallStatusPending),
			Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(q.Question))}},
	})
	if err != nil {
		return "", false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(selected(resp), "choice_"))
	if err != nil || n < 1 || n > len(q.Choices) {
		return "", false
	}
	return q.Choices[n-1], true
}
