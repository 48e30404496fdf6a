package llmtest

import "fmt"

// openAIFrames renders turn as chat.completion.chunk SSE frames: an SSE
// comment, reasoning_content deltas, content deltas, tool-call deltas
// (id and name first, then the arguments piece by piece), the finish
// chunk, a usage-only chunk with empty choices, and [DONE].
func openAIFrames(t Turn, n int) []string {
	id := fmt.Sprintf("chatcmpl-fake-%d", n)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	frames := []string{": llmtest processing\n\n", sse("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))}
	for _, p := range split(t.Reasoning, t.ChunkSize) {
		frames = append(frames, sse("", chunk(map[string]any{"reasoning_content": p}, nil)))
	}
	for _, p := range split(t.Text, t.ChunkSize) {
		frames = append(frames, sse("", chunk(map[string]any{"content": p}, nil)))
	}
	if t.ErrorInStream != "" {
		frames = append(frames, sse("", map[string]any{
			"id": id, "object": "chat.completion.chunk",
			"error": map[string]any{"message": t.ErrorInStream, "code": errorType(t, t.ErrorInStream)},
		}))
		return frames
	}
	for i, c := range t.ToolCalls {
		callID := c.ID
		if callID == "" {
			callID = fmt.Sprintf("call_%d_%d", n, i)
		}
		frames = append(frames, sse("", chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": callID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil)))
		for _, p := range split(c.Args, t.ChunkSize) {
			frames = append(frames, sse("", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": p},
			}}}, nil)))
		}
	}
	finish := t.FinishReason
	if finish == "" {
		finish = "stop"
		if len(t.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	frames = append(frames, sse("", chunk(map[string]any{}, finish)))
	u := t.Usage
	frames = append(frames, sse("", map[string]any{
		"id": id, "object": "chat.completion.chunk", "created": 1, "model": "fake", "choices": []any{},
		"usage": map[string]any{
			"prompt_tokens":             u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens,
			"completion_tokens":         u.OutputTokens,
			"total_tokens":              u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens},
			"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		},
	}))
	return append(frames, "data: [DONE]\n\n")
}

// anthropicFrames renders turn as Anthropic Messages stream events:
// message_start (input and cache usage), a thinking block with its
// signature, a text block, tool_use blocks with input_json_delta pieces,
// message_delta (stop_reason, output usage) and message_stop, with a ping.
func anthropicFrames(t Turn, n int) []string {
	u := t.Usage
	frames := []string{sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake_%d", n), "type": "message", "role": "assistant", "model": "fake",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": u.InputTokens, "output_tokens": 1,
			"cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens,
		},
	}}), sse("ping", map[string]any{"type": "ping"})}
	block := 0
	if t.Reasoning != "" {
		frames = append(frames, sse("content_block_start", map[string]any{"type": "content_block_start", "index": block,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}))
		for _, p := range split(t.Reasoning, t.ChunkSize) {
			frames = append(frames, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": block,
				"delta": map[string]any{"type": "thinking_delta", "thinking": p}}))
		}
		frames = append(frames, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": block,
			"delta": map[string]any{"type": "signature_delta", "signature": fmt.Sprintf("sig-%d", n)}}))
		frames = append(frames, sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": block}))
		block++
	}
	if t.Text != "" {
		frames = append(frames, sse("content_block_start", map[string]any{"type": "content_block_start", "index": block,
			"content_block": map[string]any{"type": "text", "text": ""}}))
		for _, p := range split(t.Text, t.ChunkSize) {
			frames = append(frames, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": block,
				"delta": map[string]any{"type": "text_delta", "text": p}}))
		}
		frames = append(frames, sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": block}))
		block++
	}
	if t.ErrorInStream != "" {
		return append(frames, sse("error", map[string]any{"type": "error",
			"error": map[string]any{"type": errorType(t, t.ErrorInStream), "message": t.ErrorInStream}}))
	}
	for i, c := range t.ToolCalls {
		callID := c.ID
		if callID == "" {
			callID = fmt.Sprintf("toolu_%d_%d", n, i)
		}
		frames = append(frames, sse("content_block_start", map[string]any{"type": "content_block_start", "index": block,
			"content_block": map[string]any{"type": "tool_use", "id": callID, "name": c.Name, "input": map[string]any{}}}))
		for _, p := range split(c.Args, t.ChunkSize) {
			frames = append(frames, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": block,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": p}}))
		}
		frames = append(frames, sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": block}))
		block++
	}
	stop := t.FinishReason
	if stop == "" {
		stop = "end_turn"
		if len(t.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	frames = append(frames, sse("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.OutputTokens}}))
	return append(frames, sse("message_stop", map[string]any{"type": "message_stop"}))
}
