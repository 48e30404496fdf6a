package mcp

import (
	"context"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-go/hermes/internal/llm"
)

// maxSamplingTokens caps what one sampling request may ask of the model.
const maxSamplingTokens = 4096

// ProviderSampler answers sampling/createMessage (for servers with
// sampling: true) with one call of the session's model: the server's
// system prompt and messages (text only; other content is described), no
// tools, max_tokens capped at 4096. It returns nil for a nil provider.
func ProviderSampler(p llm.Provider, model string) func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		if req == nil || req.Params == nil || len(req.Params.Messages) == 0 {
			return nil, errors.New("sampling request without messages")
		}
		r := llm.Request{Model: model, System: req.Params.SystemPrompt, MaxTokens: maxSamplingTokens}
		if n := int(req.Params.MaxTokens); n > 0 && n < maxSamplingTokens {
			r.MaxTokens = n
		}
		for _, m := range req.Params.Messages {
			role := llm.RoleUser
			if m.Role == "assistant" {
				role = llm.RoleAssistant
			}
			r.Messages = append(r.Messages, llm.Message{Role: role, Content: contentText(m.Content)})
		}
		st, err := p.Stream(ctx, r)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		resp, err := llm.Accumulate(st, nil)
		if err != nil {
			return nil, err
		}
		return &sdk.CreateMessageResult{Content: &sdk.TextContent{Text: resp.Message.Content}, Model: model, Role: "assistant", StopReason: "endTurn"}, nil
	}
}
