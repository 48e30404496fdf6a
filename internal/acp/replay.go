package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/internal/llm"
)

// replay sends a stored history as the updates a client saw live: user
// messages, reasoning, answers, tool calls with their results.
func (s *Server) replay(ctx context.Context, as *acpSession, history []llm.Message) {
	id := as.s.ID()
	calls := map[string]llm.ToolCall{}
	tc := newToolCalls(as)
	defer tc.clear()
	for _, m := range history {
		switch m.Role {
		case llm.RoleUser:
			if m.Content != "" {
				s.update(ctx, id, sdk.UpdateUserMessageText(m.Content))
			}
		case llm.RoleAssistant:
			if m.Reasoning != "" {
				s.update(ctx, id, sdk.UpdateAgentThoughtText(m.Reasoning))
			}
			if m.Content != "" {
				s.update(ctx, id, sdk.UpdateAgentMessageText(m.Content))
			}
			for _, c := range m.ToolCalls {
				calls[c.ID] = c
				s.update(ctx, id, tc.start(c.ID, c.Name, c.Arguments))
			}
		case llm.RoleTool:
			c, ok := calls[m.ToolCallID]
			if !ok {
				continue
			}
			for _, u := range tc.end(c.ID, c.Name, c.Arguments, m.Content, m.IsError) {
				s.update(ctx, id, u)
			}
		}
	}
}
