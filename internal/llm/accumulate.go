package llm

import (
	"errors"
	"sort"
	"strings"
)

// ErrEmptyStream is returned by Accumulate when a stream ended cleanly
// without content, tool calls or a finish reason.
var ErrEmptyStream = errors.New("the model stream ended without any content or finish reason")

// ErrIncompleteStream is returned by Accumulate when a stream ended before
// the model finished (no finish reason: the connection was cut mid-answer).
// The partial answer is not a result.
var ErrIncompleteStream = errors.New("the model stream ended before the answer was complete (no finish reason); the partial answer was discarded")

// Response is a completed model call: the assistant message it produced,
// its usage and its finish reason.
type Response struct {
	Message      Message
	Usage        Usage
	FinishReason string
}

// Accumulate drains s into a Response, calling onEvent (if not nil) for each
// event as it arrives. It closes s. Tool calls are returned in index order;
// a call that never saw EventToolCallEnd is completed from its deltas.
// A stream that ends with an error returns that error together with what was
// received so far.
func Accumulate(s Stream, onEvent func(Event)) (Response, error) {
	defer s.Close()
	var (
		resp      Response
		text      strings.Builder
		reasoning strings.Builder
		calls     = map[int]*ToolCall{}
		args      = map[int]*strings.Builder{}
		done      = map[int]bool{}
	)
	for s.Next() {
		ev := s.Event()
		if onEvent != nil {
			onEvent(ev)
		}
		switch ev.Type {
		case EventTextDelta:
			text.WriteString(ev.Text)
		case EventReasoningDelta:
			reasoning.WriteString(ev.Text)
		case EventReasoningSignature:
			resp.Message.ReasoningSignature += ev.Text
		case EventRedactedThinking:
			resp.Message.RedactedThinking = append(resp.Message.RedactedThinking, ev.Text)
		case EventToolCallStart:
			calls[ev.Index] = &ToolCall{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name}
			args[ev.Index] = &strings.Builder{}
		case EventToolCallDelta:
			if calls[ev.Index] == nil {
				calls[ev.Index] = &ToolCall{}
				args[ev.Index] = &strings.Builder{}
			}
			args[ev.Index].WriteString(ev.Text)
		case EventToolCallEnd:
			tc := ev.ToolCall
			calls[ev.Index] = &tc
			done[ev.Index] = true
		case EventUsage:
			resp.Usage = ev.Usage
		case EventFinish:
			resp.FinishReason = ev.FinishReason
		}
		if len(ev.Raw) > 0 {
			resp.Message.ReasoningDetails = ev.Raw
		}
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		tc := *calls[i]
		if !done[i] && args[i] != nil {
			tc.Arguments = args[i].String()
		}
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, tc)
	}
	resp.Message.Role = RoleAssistant
	resp.Message.Content = text.String()
	resp.Message.Reasoning = reasoning.String()
	resp.Message.FinishReason = resp.FinishReason
	err := s.Err()
	if err == nil && resp.FinishReason == "" {
		if text.Len() == 0 && len(calls) == 0 {
			err = ErrEmptyStream
		} else {
			err = ErrIncompleteStream
		}
	}
	return resp, err
}
