package agent

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/toolargs"
)

// ErrEmptyAnswer is returned by RunTurn when the model answered with no
// text and no tool call twice in a row (the call is repeated once).
var ErrEmptyAnswer = errors.New("the model returned an empty answer")

// FinishContextOverflow is the FinishReason of the assistant message
// stored after a turn the provider refused as too long for the model's
// context window (see OverflowAnswer).
const FinishContextOverflow = "context_length_exceeded"

// OverflowAnswer is the content of the marker message stored after a turn
// the provider refused as too long. The marker and the turn it ends (its
// user prompt, and the tool calls and results the turn made) stay in the
// session but are not sent to the model again (see dropOverflowedTurns),
// so a later, shorter prompt of the same session works.
const OverflowAnswer = "[no answer: the provider refused this turn as too long for the model's context window; " +
	"the prompt is kept in the session but is not sent to the model again]"

// isEmptyAnswer reports whether m is an answer without text or tool calls.
func isEmptyAnswer(m llm.Message) bool {
	return len(m.ToolCalls) == 0 && strings.TrimSpace(m.Content) == ""
}

// overflowNotice tells the person what happened to a prompt the provider
// refused as too long, and what hermes does with it.
func overflowNotice(prompt string) string {
	return fmt.Sprintf("this prompt (%d characters) is too long for the model's context window even after compression; "+
		"it stays in the session but will not be sent again, so the next message (-c) works without it. "+
		"Shorten it, or save the text to a file and ask the model to read the parts it needs",
		utf8.RuneCountInString(prompt))
}

// dropOverflowedTurns returns h without the turns ended by an
// OverflowAnswer marker: each marker, and everything from the turn's
// user prompt up to it. h is not modified; it is returned as is when it
// holds no marker.
func dropOverflowedTurns(h []llm.Message) []llm.Message {
	var out []llm.Message
	for i, m := range h {
		if m.Role != llm.RoleAssistant || m.FinishReason != FinishContextOverflow {
			continue
		}
		if out == nil {
			out = make([]llm.Message, 0, len(h))
			out = append(out, h[:i]...)
		}
		start := len(out) - 1
		for start >= 0 && (out[start].Role != llm.RoleUser || out[start].Content == wrapUpNote) {
			start--
		}
		out = out[:max(start, 0)]
		// Messages after the marker are kept: copy up to the next marker.
		for j := i + 1; j < len(h); j++ {
			if h[j].Role == llm.RoleAssistant && h[j].FinishReason == FinishContextOverflow {
				break
			}
			out = append(out, h[j])
		}
	}
	if out == nil {
		return h
	}
	return out
}

// ranArguments returns calls with each call's arguments as the tool runs
// them: arguments that toolargs repairs ("   " or "" as {}, a
// double-encoded object as the object, a raw newline escaped) are stored
// and sent back repaired, so the history holds what ran. Arguments that
// cannot be repaired are kept as the model wrote them (the call did not
// run; its result says why). calls is not modified.
func ranArguments(calls []llm.ToolCall) []llm.ToolCall {
	var out []llm.ToolCall
	for i, tc := range calls {
		fixed, err := toolargs.Repair(tc.Arguments)
		if err != nil || fixed.JSON == tc.Arguments {
			continue
		}
		if out == nil {
			out = append([]llm.ToolCall(nil), calls...)
		}
		out[i].Arguments = fixed.JSON
	}
	if out == nil {
		return calls
	}
	return out
}
