package agent

import (
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/toolargs"
)

// ValidArguments returns h ready to send to a provider: every assistant tool
// call's arguments are a JSON object. Arguments that toolargs can repair
// are sent repaired (what the tool ran with); arguments it cannot repair
// (truncated JSON) are sent as {} — the stored row keeps the original text,
// and the call's tool result already tells the model what was wrong. Strict
// servers (vLLM, some OpenAI-compatible gateways) answer HTTP 400 to a
// request whose history holds invalid arguments, which would fail every
// later turn of the session. h is not modified; it is returned as is when
// nothing needs changing.
func ValidArguments(h []llm.Message) []llm.Message {
	var out []llm.Message
	for i, m := range h {
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		var calls []llm.ToolCall
		for j, tc := range m.ToolCalls {
			if toolargs.Valid(tc.Arguments) {
				continue
			}
			if calls == nil {
				calls = append([]llm.ToolCall(nil), m.ToolCalls...)
			}
			if fixed, err := toolargs.Repair(tc.Arguments); err == nil {
				calls[j].Arguments = fixed.JSON
			} else {
				calls[j].Arguments = "{}"
			}
		}
		if calls == nil {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), h...)
		}
		out[i].ToolCalls = calls
	}
	if out == nil {
		return h
	}
	return out
}
