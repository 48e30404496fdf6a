package anthropic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

var userHi = llm.Request{Model: "claude-sonnet-4", System: "be brief", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}

func run(t *testing.T, p llm.Provider, req llm.Request) (llm.Response, error) {
	t.Helper()
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Accumulate(st, nil)
}

// expectFromSSE decodes a recorded Messages stream without the SDK.
func expectFromSSE(t *testing.T, body string) (text, thinking, sig string, calls []llm.ToolCall, in, out int) {
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Usage struct {
					InputTokens int `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			ContentBlock struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Text, Thinking, Signature string
				PartialJSON               string `json:"partial_json"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line[6:]), &ev); err != nil {
			t.Fatalf("cassette event: %v", err)
		}
		switch ev.Type {
		case "message_start":
			in = ev.Message.Usage.InputTokens
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				calls = append(calls, llm.ToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
			}
		case "content_block_delta":
			text += ev.Delta.Text
			thinking += ev.Delta.Thinking
			sig += ev.Delta.Signature
			if ev.Delta.PartialJSON != "" {
				calls[len(calls)-1].Arguments += ev.Delta.PartialJSON
			}
		case "message_delta":
			out = ev.Usage.OutputTokens
		}
	}
	return
}

func TestCassettes(t *testing.T) {
	for _, c := range llmtest.Cassettes(t) {
		for i, in := range c.Interactions {
			if !in.Anthropic() {
				continue
			}
			t.Run(c.Name+"/"+string(rune('0'+i)), func(t *testing.T) {
				var turn llmtest.Turn
				var wantText, wantThinking, wantSig string
				var wantCalls []llm.ToolCall
				wantIn, wantOut := -1, -1
				if in.Streaming() {
					turn.RawBody = in.Response.Body
					wantText, wantThinking, wantSig, wantCalls, wantIn, wantOut = expectFromSSE(t, in.Response.Body)
				} else {
					var m struct {
						Content []struct {
							Type, Text, Thinking, Signature, ID, Name string
							Input                                     json.RawMessage
						}
					}
					if err := json.Unmarshal([]byte(in.Response.Body), &m); err != nil {
						t.Fatal(err)
					}
					turn.ChunkSize = 4
					for _, b := range m.Content {
						switch b.Type {
						case "text":
							turn.Text += b.Text
						case "thinking":
							turn.Reasoning += b.Thinking
						case "tool_use":
							turn.ToolCalls = append(turn.ToolCalls, llmtest.Call{ID: b.ID, Name: b.Name, Args: string(b.Input)})
							wantCalls = append(wantCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
						}
					}
					wantText, wantThinking = turn.Text, turn.Reasoning
					if turn.Reasoning != "" {
						wantSig = "sig-1"
					}
				}
				srv := llmtest.NewServer(t, turn)
				resp, err := run(t, New(Config{BaseURL: srv.AnthropicURL, APIKey: "k"}), userHi)
				if err != nil {
					t.Fatal(err)
				}
				m := resp.Message
				if m.Content != wantText || m.Reasoning != wantThinking || m.ReasoningSignature != wantSig {
					t.Errorf("got text %q thinking %q sig %q; want %q %q %q", m.Content, m.Reasoning, m.ReasoningSignature, wantText, wantThinking, wantSig)
				}
				if len(m.ToolCalls) != len(wantCalls) {
					t.Fatalf("calls = %+v, want %+v", m.ToolCalls, wantCalls)
				}
				for j := range wantCalls {
					if m.ToolCalls[j] != wantCalls[j] || !json.Valid([]byte(m.ToolCalls[j].Arguments)) {
						t.Errorf("call %d = %+v, want %+v", j, m.ToolCalls[j], wantCalls[j])
					}
				}
				if wantIn >= 0 && (resp.Usage.InputTokens != wantIn || resp.Usage.OutputTokens != wantOut) {
					t.Errorf("usage = %+v, want in %d out %d", resp.Usage, wantIn, wantOut)
				}
				wantFinish := "stop"
				if len(wantCalls) > 0 {
					wantFinish = "tool_calls"
				}
				if resp.FinishReason != wantFinish {
					t.Errorf("finish = %q, want %q", resp.FinishReason, wantFinish)
				}
			})
		}
	}
}

func TestHistoryConversionAndThinking(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "ok"})
	req := llm.Request{
		Model: "claude-sonnet-4", System: "sys", ReasoningEffort: "high",
		Tools: []llm.ToolSpec{
			{Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "terminal", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
		},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "triage"},
			{Role: llm.RoleAssistant, Content: "Looking.", Reasoning: "plan", ReasoningSignature: "sig-a", RedactedThinking: []string{"opaque"},
				ToolCalls: []llm.ToolCall{{ID: "t1", Name: "read_file", Arguments: `{"path":"a"}`}, {ID: "t2", Name: "terminal", Arguments: `not json`}}},
			{Role: llm.RoleTool, ToolCallID: "t1", Content: "data"},
			{Role: llm.RoleTool, ToolCallID: "t2", Content: "denied", IsError: true},
		},
	}
	if _, err := run(t, New(Config{BaseURL: srv.AnthropicURL, APIKey: "key-1", AuthToken: "tok-1"}), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("X-Api-Key") != "key-1" || r.Header.Get("Authorization") != "" {
		t.Errorf("auth headers: x-api-key %q authorization %q", r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
	}
	var body struct {
		System   []map[string]any `json:"system"`
		Tools    []map[string]any `json:"tools"`
		Thinking struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		} `json:"thinking"`
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.System[0]["cache_control"] == nil || body.Tools[1]["cache_control"] == nil || body.Tools[0]["cache_control"] != nil {
		t.Errorf("cache_control: system %v tools %v", body.System, body.Tools)
	}
	if body.Thinking.Type != "enabled" || body.Thinking.Budget != 16384 || body.MaxTokens <= body.Thinking.Budget {
		t.Errorf("thinking = %+v max_tokens %d", body.Thinking, body.MaxTokens)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("messages = %+v, want user, assistant, one merged user tool_result message", body.Messages)
	}
	var types []string
	for _, b := range body.Messages[1].Content {
		types = append(types, b["type"].(string))
	}
	if strings.Join(types, ",") != "thinking,redacted_thinking,text,tool_use,tool_use" {
		t.Errorf("assistant blocks = %v", types)
	}
	if body.Messages[1].Content[0]["signature"] != "sig-a" {
		t.Errorf("thinking block = %v", body.Messages[1].Content[0])
	}
	if in, _ := json.Marshal(body.Messages[1].Content[4]["input"]); string(in) != "{}" {
		t.Errorf("malformed arguments sent as %s, want {}", in)
	}
	res := body.Messages[2].Content
	if len(res) != 2 || res[0]["type"] != "tool_result" || res[1]["is_error"] != true || res[1]["tool_use_id"] != "t2" {
		t.Errorf("tool results = %v", res)
	}
}

func TestAuthTokenBearer(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "env-key-must-not-be-used")
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "ok"})
	if _, err := run(t, New(Config{BaseURL: srv.AnthropicURL, AuthToken: "tok-1"}), userHi); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "Bearer tok-1" || h.Get("X-Api-Key") != "" {
		t.Errorf("headers = %v", h)
	}
}

func TestThinkingStreamRoundTrip(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Reasoning: "let me think", Text: "answer", ChunkSize: 3,
		ToolCalls: []llmtest.Call{{Name: "read_file", Args: `{"path":"runbook.md"}`}, {Name: "terminal", Args: `{"command":"uptime"}`}},
		Usage:     llm.Usage{InputTokens: 50, CacheReadTokens: 1000, CacheWriteTokens: 20, OutputTokens: 30}})
	resp, err := run(t, New(Config{BaseURL: srv.AnthropicURL, APIKey: "k"}), userHi)
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Message
	if m.Reasoning != "let me think" || m.ReasoningSignature != "sig-1" || m.Content != "answer" || len(m.ToolCalls) != 2 {
		t.Fatalf("message = %+v", m)
	}
	if m.ToolCalls[1].Arguments != `{"command":"uptime"}` {
		t.Errorf("args = %q", m.ToolCalls[1].Arguments)
	}
	if (resp.Usage != llm.Usage{InputTokens: 50, CacheReadTokens: 1000, CacheWriteTokens: 20, OutputTokens: 30}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
}

func TestOverloadedInStreamIsRetryable(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{ErrorInStream: "Overloaded"}, llmtest.Turn{Text: "second try"})
	var slept int
	p := llm.WithRetry(New(Config{BaseURL: srv.AnthropicURL, APIKey: "k"}), llm.RetryPolicy{
		Sleep: func(context.Context, time.Duration) error { slept++; return nil }})
	resp, err := run(t, p, userHi)
	if err != nil || resp.Message.Content != "second try" || slept != 1 {
		t.Fatalf("resp %q err %v slept %d", resp.Message.Content, err, slept)
	}
	_, err = run(t, New(Config{BaseURL: llmtest.NewServer(t, llmtest.Turn{Text: "part", ErrorInStream: "Overloaded"}).AnthropicURL, APIKey: "k"}), userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !ae.Retryable || ae.Message != "Overloaded" {
		t.Fatalf("err = %#v", err)
	}
}

func TestUnauthorizedNamesEnvVar(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Status: 401, Error: "invalid x-api-key", ErrorType: "authentication_error"})
	_, err := run(t, New(Config{BaseURL: srv.AnthropicURL, APIKey: "bad",
		Hints: llm.ErrorHints{KeyFix: "set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"}}), userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Retryable || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") || !strings.Contains(err.Error(), "invalid x-api-key") {
		t.Fatalf("err = %v", err)
	}
}

func TestPromptTooLong(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Status: 400, Error: "prompt is too long: 210000 tokens > 200000 maximum", ErrorType: "invalid_request_error"})
	_, err := run(t, New(Config{BaseURL: srv.AnthropicURL, APIKey: "k"}), userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !ae.ContextOverflow {
		t.Fatalf("err = %v", err)
	}
}
