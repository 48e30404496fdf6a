package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// expected is what a recorded chat-completions body says, decoded here
// without the SDK: the concatenated deltas, tool calls by index, usage.
type expected struct {
	text, reasoning string
	calls           map[int]*llm.ToolCall
	promptTokens    int
	completion      int
	finish          string
}

func expectFromSSE(t *testing.T, body string) expected {
	t.Helper()
	e := expected{calls: map[int]*llm.ToolCall{}}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") || strings.TrimSpace(line[6:]) == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content          *string `json:"content"`
					ReasoningContent *string `json:"reasoning_content"`
					Reasoning        *string `json:"reasoning"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line[6:]), &c); err != nil {
			t.Fatalf("cassette chunk does not parse: %v: %s", err, line)
		}
		for _, ch := range c.Choices {
			d := ch.Delta
			if d.Content != nil {
				e.text += *d.Content
			}
			if d.ReasoningContent != nil {
				e.reasoning += *d.ReasoningContent
			} else if d.Reasoning != nil {
				e.reasoning += *d.Reasoning
			}
			for _, tc := range d.ToolCalls {
				if e.calls[tc.Index] == nil {
					e.calls[tc.Index] = &llm.ToolCall{}
				}
				if tc.ID != "" {
					e.calls[tc.Index].ID = tc.ID
				}
				e.calls[tc.Index].Name += tc.Function.Name
				e.calls[tc.Index].Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				e.finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			e.promptTokens, e.completion = c.Usage.PromptTokens, c.Usage.CompletionTokens
		}
	}
	return e
}

func TestCassettesStreaming(t *testing.T) {
	n := 0
	for _, c := range llmtest.Cassettes(t) {
		for i, in := range c.Interactions {
			if in.Anthropic() || !in.Streaming() {
				continue
			}
			n++
			t.Run(c.Name+"/"+string(rune('0'+i)), func(t *testing.T) {
				srv := llmtest.NewServer(t, llmtest.Turn{RawBody: in.Response.Body})
				p := New(Config{Name: "openrouter", BaseURL: srv.URL, APIKey: "sk-test"})
				st, err := p.Stream(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
				if err != nil {
					t.Fatal(err)
				}
				resp, err := llm.Accumulate(st, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := expectFromSSE(t, in.Response.Body)
				if resp.Message.Content != want.text {
					t.Errorf("text = %q, want %q", resp.Message.Content, want.text)
				}
				if resp.Message.Reasoning != want.reasoning {
					t.Errorf("reasoning = %q, want %q", resp.Message.Reasoning, want.reasoning)
				}
				if resp.FinishReason != want.finish {
					t.Errorf("finish = %q, want %q", resp.FinishReason, want.finish)
				}
				if len(resp.Message.ToolCalls) != len(want.calls) {
					t.Fatalf("got %d tool calls, want %d", len(resp.Message.ToolCalls), len(want.calls))
				}
				for i, got := range resp.Message.ToolCalls {
					w := want.calls[i]
					if got.ID != w.ID || got.Name != w.Name || got.Arguments != w.Arguments {
						t.Errorf("call %d = %+v, want %+v", i, got, *w)
					}
					if !json.Valid([]byte(got.Arguments)) {
						t.Errorf("call %d arguments are not JSON: %q", i, got.Arguments)
					}
				}
				u := resp.Usage
				if u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens != want.promptTokens || u.OutputTokens != want.completion {
					t.Errorf("usage = %+v, want prompt %d completion %d", u, want.promptTokens, want.completion)
				}
				if strings.Contains(in.Response.Body, `"reasoning_details"`) {
					var details []map[string]any
					if err := json.Unmarshal(resp.Message.ReasoningDetails, &details); err != nil || len(details) == 0 {
						t.Fatalf("reasoning_details not kept: %s", resp.Message.ReasoningDetails)
					}
					if details[0]["text"] != want.reasoning || details[0]["signature"] == nil {
						t.Errorf("merged reasoning_details = %v, want the full text and a signature", details[0])
					}
				}
			})
		}
	}
	if n == 0 {
		t.Skip("no chat-completions streaming cassettes")
	}
}

// TestCassettesNonStreaming replays the answers of the non-streaming
// recordings as a fake stream split into 3-byte chunks, and checks that the
// follow-up request of each recording (assistant tool_calls, tool results)
// is rebuilt by our conversion with the same messages.
func TestCassettesNonStreaming(t *testing.T) {
	for _, c := range llmtest.Cassettes(t) {
		for i, in := range c.Interactions {
			if in.Anthropic() || in.Streaming() {
				continue
			}
			t.Run(c.Name+"/"+string(rune('0'+i)), func(t *testing.T) {
				var body struct {
					Choices []struct {
						Message struct {
							Content          string `json:"content"`
							ReasoningContent string `json:"reasoning_content"`
							ToolCalls        []struct {
								ID       string `json:"id"`
								Function struct {
									Name      string `json:"name"`
									Arguments string `json:"arguments"`
								} `json:"function"`
							} `json:"tool_calls"`
						} `json:"message"`
					} `json:"choices"`
				}
				if err := json.Unmarshal([]byte(in.Response.Body), &body); err != nil || len(body.Choices) == 0 {
					t.Fatalf("recorded answer does not parse: %v", err)
				}
				m := body.Choices[0].Message
				turn := llmtest.Turn{Text: m.Content, Reasoning: m.ReasoningContent, ChunkSize: 3}
				for _, tc := range m.ToolCalls {
					turn.ToolCalls = append(turn.ToolCalls, llmtest.Call{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
				}
				srv := llmtest.NewServer(t, turn)
				p := New(Config{Name: "custom", BaseURL: srv.URL})
				history := historyFromRecorded(t, in.Request.Body)
				st, err := p.Stream(context.Background(), history)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := llm.Accumulate(st, nil)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Message.Content != m.Content || resp.Message.Reasoning != m.ReasoningContent || len(resp.Message.ToolCalls) != len(m.ToolCalls) {
					t.Fatalf("got %+v, want %+v", resp.Message, m)
				}
				for j, tc := range resp.Message.ToolCalls {
					if tc.Name != m.ToolCalls[j].Function.Name || tc.Arguments != m.ToolCalls[j].Function.Arguments || tc.ID != m.ToolCalls[j].ID {
						t.Errorf("call %d = %+v", j, tc)
					}
				}
				compareSentMessages(t, in.Request.Body, srv.Requests()[0].Body)
			})
		}
	}
}

type wireMessage = llmtest.ChatMessage

func historyFromRecorded(t *testing.T, body string) llm.Request {
	var rec struct {
		Messages []wireMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		t.Fatalf("recorded request: %v", err)
	}
	req := llm.Request{Model: "m"}
	for _, m := range rec.Messages {
		content, _ := m.Content.(string)
		if m.Role == "system" {
			req.System = content
			continue
		}
		msg := llm.Message{Role: llm.Role(m.Role), Content: content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	return req
}

func compareSentMessages(t *testing.T, recorded string, sent []byte) {
	t.Helper()
	var a, b struct {
		Messages []wireMessage `json:"messages"`
	}
	_ = json.Unmarshal([]byte(recorded), &a)
	if err := json.Unmarshal(sent, &b); err != nil {
		t.Fatal(err)
	}
	if len(a.Messages) != len(b.Messages) {
		t.Fatalf("sent %d messages, recorded %d", len(b.Messages), len(a.Messages))
	}
	for i := range a.Messages {
		x, y := a.Messages[i], b.Messages[i]
		xs, _ := json.Marshal(x)
		ys, _ := json.Marshal(y)
		if string(xs) != string(ys) {
			t.Errorf("message %d sent as %s, recorded %s", i, ys, xs)
		}
	}
}
