package openai

import (
	"encoding/base64"
	"encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hermes-go/hermes/internal/llm"
)

// buildParams converts req to chat-completions parameters: the system
// prompt as the first message, the history (assistant tool_calls, tool
// results as role "tool"), tools as functions with tool_choice auto, and
// stream_options.include_usage. Assistant reasoning is sent back as
// reasoning_content (DeepSeek, llama.cpp) and, when the provider sent one,
// the reasoning_details array (OpenRouter).
func (p *Provider) buildParams(req llm.Request) openai.ChatCompletionNewParams {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	params.Messages = append(params.Messages, convertMessages(req.Messages)...)
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  p.toolParameters(t.Parameters),
		}))
	}
	if len(params.Tools) > 0 {
		params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}
	}
	if req.MaxTokens > 0 {
		if p.cfg.Name == "openai" {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.ReasoningEffort != "" {
		switch p.cfg.Name {
		case "openai":
			params.ReasoningEffort = shared.ReasoningEffort(req.ReasoningEffort)
		case "openrouter":
			params.SetExtraFields(map[string]any{"reasoning": map[string]any{"effort": req.ReasoningEffort}})
		}
	}
	return params
}

// toolParameters returns a tool's decoded JSON Schema from the cache.
func (p *Provider) toolParameters(raw json.RawMessage) shared.FunctionParameters {
	if v, ok := p.schemas.Load(string(raw)); ok {
		return v.(shared.FunctionParameters)
	}
	schema := decodeToolParameters(raw)
	p.schemas.Store(string(raw), schema)
	return schema
}

// decodeToolParameters decodes a JSON Schema, falling back to an empty object schema.
func decodeToolParameters(raw json.RawMessage) shared.FunctionParameters {
	var schema map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &schema) != nil || schema == nil {
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return shared.FunctionParameters(schema)
}

// convertMessages converts the history. Chat completions accepts images only
// in user messages, so the images of a run of tool results are sent in one
// user message right after the run, each introduced by the call it answers.
func convertMessages(msgs []llm.Message) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	var pending []openai.ChatCompletionContentPartUnionParam
	flush := func() {
		if len(pending) > 0 {
			out = append(out, openai.UserMessage(pending))
			pending = nil
		}
	}
	for _, m := range msgs {
		if m.Role != llm.RoleTool {
			flush()
		}
		out = append(out, convertMessage(m))
		if m.Role == llm.RoleTool && len(m.Parts) > 0 {
			pending = append(pending, openai.TextContentPart("Content returned by tool call "+m.ToolCallID+" ("+m.ToolName+"):"))
			pending = append(pending, contentParts(m.Parts)...)
		}
	}
	flush()
	return out
}

// contentParts converts parts to chat-completions content parts; images
// become base64 data URLs.
func contentParts(parts []llm.Part) []openai.ChatCompletionContentPartUnionParam {
	var out []openai.ChatCompletionContentPartUnionParam
	for _, p := range parts {
		switch p.Type {
		case llm.PartImage:
			out = append(out, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
				URL: "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data),
			}))
		case llm.PartText:
			out = append(out, openai.TextContentPart(p.Text))
		}
	}
	return out
}

func convertMessage(m llm.Message) openai.ChatCompletionMessageParamUnion {
	switch m.Role {
	case llm.RoleSystem:
		return openai.SystemMessage(m.Content)
	case llm.RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID)
	case llm.RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
				},
			})
		}
		extra := map[string]any{}
		if m.Reasoning != "" {
			extra["reasoning_content"] = m.Reasoning
		}
		if len(m.ReasoningDetails) > 0 && json.Valid(m.ReasoningDetails) {
			extra["reasoning_details"] = m.ReasoningDetails
		}
		if len(extra) > 0 {
			a.SetExtraFields(extra)
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
	default:
		if len(m.Parts) > 0 {
			parts := []openai.ChatCompletionContentPartUnionParam{}
			if m.Content != "" {
				parts = append(parts, openai.TextContentPart(m.Content))
			}
			return openai.UserMessage(append(parts, contentParts(m.Parts)...))
		}
		return openai.UserMessage(m.Content)
	}
}
