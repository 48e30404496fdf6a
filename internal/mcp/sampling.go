package mcp

import (
	"context"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-go/hermes/internal/llm"
)

// SampleFunc answers a server's sampling/createMessage request.
//
// Sampling (and roots) are deprecated from protocol version 2026-07-28
// (SEP-2577) but still served during the deprecation window; hermes
// offers them to the servers that negotiate older versions.
//
//lint:ignore SA1019 sampling is still part of the protocol versions servers speak today
type SampleFunc = func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error)

// maxSamplingTokens caps what one sampling request may ask of the model.
const maxSamplingTokens = 4096

// ProviderSampler answers sampling/createMessage (for servers with
// sampling: true) with one call of the session's model: the server's
// system prompt and messages (text only; other content is described), no
// tools, max_tokens capped at 4096. It returns nil for a nil provider.
func ProviderSampler(p llm.Provider, model string) SampleFunc {
	if p == nil {
		return nil
	}
	//lint:ignore SA1019 see SampleFunc
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
		//lint:ignore SA1019 see SampleFunc
		return &sdk.CreateMessageResult{Content: &sdk.TextContent{Text: resp.Message.Content}, Model: model, Role: "assistant", StopReason: "endTurn"}, nil
	}
}

// clientOptions returns the SDK client options of a server: list_changed
// handling, and sampling when the entry allows it.
func clientOptions(relist func(), sample SampleFunc) *sdk.ClientOptions {
	opts := &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { relist() },
	}
	if sample != nil {
		//lint:ignore SA1019 see SampleFunc
		opts.CreateMessageHandler = sample
	}
	return opts
}

// addRoot makes client answer roots/list with the workspace directory.
func addRoot(client *sdk.Client, dir string) {
	//lint:ignore SA1019 see SampleFunc: servers (server-filesystem) still ask roots/list
	client.AddRoots(&sdk.Root{URI: fileURI(dir), Name: "workspace"})
}
