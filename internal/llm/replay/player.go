package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
)

// Player is the "replay" provider: the Nth Stream call returns the Nth
// entry of the file. It is safe for concurrent use.
type Player struct {
	path    string
	entries []Entry
	lines   []int
	mu      sync.Mutex
	next    int
}

// Open reads a recording or scripted model file (see the package doc).
// Errors name the file and line at fault.
func Open(path string) (*Player, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay file: %w (set --replay FILE to a file written by --record or a scripted model file)", err)
	}
	defer f.Close()
	p := &Player{path: path}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var e Entry
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s:%d: %v (each line is one JSON object with text, tool_calls, usage, ...)", path, n, err)
		}
		for i, tc := range e.ToolCalls {
			if tc.Name == "" {
				return nil, fmt.Errorf("%s:%d: tool_calls[%d] has no name", path, n, i)
			}
		}
		p.entries = append(p.entries, e)
		p.lines = append(p.lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Name returns "replay".
func (p *Player) Name() string { return "replay" }

// Len is the number of recorded responses.
func (p *Player) Len() int { return len(p.entries) }

// Stream returns the next recorded response; past the end it fails with an
// *llm.APIError saying how many responses the recording has.
func (p *Player) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	n := p.next
	p.next++
	p.mu.Unlock()
	if n >= len(p.entries) {
		return nil, &llm.APIError{Provider: "replay",
			Message: fmt.Sprintf("model call %d has no response: the recording %s has %d responses", n+1, p.path, len(p.entries)),
			Fix:     "record a longer run with --record, or add lines to the scripted model file"}
	}
	e := p.entries[n]
	if e.Error != nil {
		return nil, &llm.APIError{Provider: "replay", StatusCode: e.Error.Status, Message: e.Error.Message,
			Retryable: e.Error.Retryable, ContextOverflow: e.Error.ContextOverflow}
	}
	return &sliceStream{events: events(e, p.lines[n])}, nil
}

// events renders an entry as the normalized stream a provider would produce.
func events(e Entry, line int) []llm.Event {
	var out []llm.Event
	if e.Reasoning != "" {
		out = append(out, llm.Event{Type: llm.EventReasoningDelta, Text: e.Reasoning})
	}
	if e.ReasoningSignature != "" {
		out = append(out, llm.Event{Type: llm.EventReasoningSignature, Text: e.ReasoningSignature})
	}
	if e.Text != "" {
		out = append(out, llm.Event{Type: llm.EventTextDelta, Text: e.Text})
	}
	for i, tc := range e.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_replay_%d_%d", line, i)
		}
		call := llm.ToolCall{ID: id, Name: tc.Name, Arguments: argumentsText(tc.Arguments)}
		out = append(out,
			llm.Event{Type: llm.EventToolCallStart, Index: i, ToolCall: llm.ToolCall{ID: id, Name: tc.Name}},
			llm.Event{Type: llm.EventToolCallDelta, Index: i, Text: call.Arguments},
			llm.Event{Type: llm.EventToolCallEnd, Index: i, ToolCall: call})
	}
	if e.Usage != nil {
		out = append(out, llm.Event{Type: llm.EventUsage, Usage: *e.Usage})
	}
	finish := e.FinishReason
	if finish == "" {
		finish = "stop"
		if len(e.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	out = append(out, llm.Event{Type: llm.EventFinish, FinishReason: finish, Raw: e.ReasoningDetails})
	return out
}

type sliceStream struct {
	events []llm.Event
	pos    int
}

func (s *sliceStream) Next() bool {
	if s.pos >= len(s.events) {
		return false
	}
	s.pos++
	return true
}
func (s *sliceStream) Event() llm.Event { return s.events[s.pos-1] }
func (s *sliceStream) Err() error       { return nil }
func (s *sliceStream) Close() error     { return nil }
