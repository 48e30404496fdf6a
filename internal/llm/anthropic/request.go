package anthropic

import (
	"encoding/base64"
	"encoding/json"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hermes-go/hermes/internal/llm"
)

// DefaultMaxTokens is max_tokens when the request sets none (the Messages
// API requires it).
const DefaultMaxTokens = 8192

// ThinkingBudget maps a reasoning effort to an extended-thinking
// budget_tokens (Anthropic "extended thinking" doc: minimum 1024):
// minimal 1024, low 2048, medium 8192, high 16384, xhigh 32768; 0 for "",
// "none" or an unknown value (thinking off).
func ThinkingBudget(effort string) int {
	switch effort {
	case "minimal":
		return 1024
	case "low":
		return 2048
	case "medium":
		return 8192
	case "high":
		return 16384
	case "xhigh":
		return 32768
	}
	return 0
}

// buildParams converts req to Messages API parameters: the system prompt as
// one text block with cache_control ephemeral, tools (through tools, see
// toolCache) with cache_control on the last one, and the history converted
// by convertMessages.
func buildParams(req llm.Request, tools *toolCache) anthropic.MessageNewParams {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	params := anthropic.MessageNewParams{
		Model:    anthropic.Model(req.Model),
		Messages: convertMessages(req.Messages),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	for i, t := range req.Tools {
		params.Tools = append(params.Tools, tools.param(t, i == len(req.Tools)-1))
	}
	if budget := ThinkingBudget(req.ReasoningEffort); budget > 0 {
		params.Thinking = anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: int64(budget)}}
		maxTokens = max(maxTokens, budget+4096)
	}
	params.MaxTokens = int64(maxTokens)
	return params
}

// convertMessages maps the history to Messages API turns: assistant
// messages become thinking (with signature) or redacted_thinking blocks
// first, then text, then tool_use; tool results become tool_result blocks
// in a user message, consecutive results merged into one message, is_error
// kept. System messages inside the history are sent as user text.
func convertMessages(msgs []llm.Message) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	var results []anthropic.ContentBlockParamUnion
	flush := func() {
		if len(results) > 0 {
			out = append(out, anthropic.NewUserMessage(results...))
			results = nil
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleTool:
			results = append(results, toolResult(m))
		case llm.RoleAssistant:
			flush()
			var blocks []anthropic.ContentBlockParamUnion
			if m.Reasoning != "" && m.ReasoningSignature != "" {
				blocks = append(blocks, anthropic.NewThinkingBlock(m.ReasoningSignature, m.Reasoning))
			}
			for _, data := range m.RedactedThinking {
				blocks = append(blocks, anthropic.NewRedactedThinkingBlock(data))
			}
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock("(no answer)"))
			}
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		default:
			flush()
			blocks := []anthropic.ContentBlockParamUnion{}
			if m.Content != "" || len(m.Parts) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(nonEmpty(m.Content)))
			}
			for _, p := range m.Parts {
				switch p.Type {
				case llm.PartImage:
					blocks = append(blocks, anthropic.NewImageBlockBase64(p.MediaType, base64.StdEncoding.EncodeToString(p.Data)))
				case llm.PartText:
					blocks = append(blocks, anthropic.NewTextBlock(nonEmpty(p.Text)))
				}
			}
			out = append(out, anthropic.NewUserMessage(blocks...))
		}
	}
	flush()
	return out
}

// toolInput is the call's arguments as a JSON object; empty or malformed
// arguments (which the agent refused to run) are sent as {}.
func toolInput(args string) json.RawMessage {
	var obj map[string]any
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}

// nonEmpty replaces empty text, which the Messages API rejects.
func nonEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

// toolResult builds a tool_result block: the text, then any image parts
// (tool_result content accepts image blocks).
func toolResult(m llm.Message) anthropic.ContentBlockParamUnion {
	block := anthropic.NewToolResultBlock(m.ToolCallID, nonEmpty(m.Content), m.IsError)
	for _, p := range m.Parts {
		switch p.Type {
		case llm.PartImage:
			img := anthropic.NewImageBlockBase64(p.MediaType, base64.StdEncoding.EncodeToString(p.Data)).OfImage
			block.OfToolResult.Content = append(block.OfToolResult.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: img})
		case llm.PartText:
			block.OfToolResult.Content = append(block.OfToolResult.Content,
				anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: nonEmpty(p.Text)}})
		}
	}
	return block
}
