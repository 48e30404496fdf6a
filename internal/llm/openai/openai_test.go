package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

var userHi = llm.Request{Model: "m", System: "be brief", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}

func newProvider(url string) *Provider {
	return New(Config{Name: "openrouter", BaseURL: url, APIKey: "sk-secret-123",
		Hints: llm.ErrorHints{KeyFix: "set OPENROUTER_API_KEY (or model.api_key in config.yaml)"}})
}

func run(t *testing.T, p llm.Provider, req llm.Request) (llm.Response, error) {
	t.Helper()
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Accumulate(st, nil)
}

func TestToolCallsSplitAcrossChunks(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{
		Text:      "Reading both.",
		Reasoning: "I need two files",
		ChunkSize: 2,
		ToolCalls: []llmtest.Call{
			{Name: "read_file", Args: `{"path":"runbook.md","offset":1}`},
			{Name: "read_file", Args: `{"path":"incidents/ü-2.md"}`},
		},
		Usage: llm.Usage{InputTokens: 100, CacheReadTokens: 40, OutputTokens: 12, ReasoningTokens: 5},
	})
	var deltas int
	st, err := newProvider(srv.URL).Stream(context.Background(), userHi)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.Accumulate(st, func(ev llm.Event) {
		if ev.Type == llm.EventToolCallDelta {
			deltas++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v", resp.Message.ToolCalls)
	}
	if got := resp.Message.ToolCalls[1].Arguments; got != `{"path":"incidents/ü-2.md"}` {
		t.Errorf("second call args = %q", got)
	}
	if resp.Message.ToolCalls[0].ID == resp.Message.ToolCalls[1].ID {
		t.Error("two calls share an id")
	}
	if deltas < 20 {
		t.Errorf("only %d argument deltas; the fake split them in 2-byte pieces", deltas)
	}
	if resp.Message.Content != "Reading both." || resp.Message.Reasoning != "I need two files" {
		t.Errorf("message = %+v", resp.Message)
	}
	want := llm.Usage{InputTokens: 100, CacheReadTokens: 40, OutputTokens: 12, ReasoningTokens: 5}
	if resp.Usage != want || resp.FinishReason != "tool_calls" {
		t.Errorf("usage = %+v finish %q", resp.Usage, resp.FinishReason)
	}
}

func TestRequestShapeAndReasoningRoundTrip(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "done"})
	details := json.RawMessage(`[{"type":"reasoning.text","text":"think","signature":"sig","index":0}]`)
	req := llm.Request{
		Model: "deepseek/deepseek-r1", System: "sys",
		Tools: []llm.ToolSpec{{Name: "read_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "triage"},
			{Role: llm.RoleAssistant, Reasoning: "think", ReasoningDetails: details,
				ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: ""}}},
			{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "read_file", Content: "1|# Runbook"},
		},
	}
	p := New(Config{Name: "openrouter", BaseURL: srv.URL, APIKey: "sk-secret-123",
		Headers: map[string]string{"HTTP-Referer": "https://hermes.test", "X-Title": "hermes"}})
	if _, err := run(t, p, req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("Authorization") != "Bearer sk-secret-123" || r.Header.Get("X-Title") != "hermes" {
		t.Errorf("headers = %v", r.Header)
	}
	body := r.JSON()
	msgs := body["messages"].([]any)
	if len(msgs) != 4 || msgs[0].(map[string]any)["role"] != "system" {
		t.Fatalf("messages = %v", msgs)
	}
	asst := msgs[2].(map[string]any)
	if asst["reasoning_content"] != "think" {
		t.Errorf("reasoning_content not sent back: %v", asst)
	}
	if d, _ := json.Marshal(asst["reasoning_details"]); !strings.Contains(string(d), `"signature":"sig"`) {
		t.Errorf("reasoning_details not sent back: %s", d)
	}
	call := asst["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
	if call["arguments"] != "{}" {
		t.Errorf("empty arguments sent as %q, want {}", call["arguments"])
	}
	tool := msgs[3].(map[string]any)
	if tool["role"] != "tool" || tool["tool_call_id"] != "c1" {
		t.Errorf("tool result = %v", tool)
	}
	if body["tool_choice"] != "auto" || body["stream"] != true {
		t.Errorf("tool_choice/stream = %v %v", body["tool_choice"], body["stream"])
	}
	if so := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v", so)
	}
}

func TestNoKeyNoAuthorizationHeader(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env-must-not-leak")
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "local"})
	p := New(Config{Name: "custom", BaseURL: srv.URL})
	if _, err := run(t, p, userHi); err != nil {
		t.Fatal(err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none for a keyless custom endpoint", h)
	}
}

func TestErrorInsideStream(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "partial", ErrorInStream: "Provider returned error: upstream overloaded"})
	_, err := run(t, newProvider(srv.URL), userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "upstream overloaded") || !ae.Retryable {
		t.Fatalf("err = %v, want a retryable APIError with the stream's message", err)
	}
}

func TestUnauthorizedNamesEnvVar(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Status: 401, Error: "No auth credentials found"})
	_, err := run(t, newProvider(srv.URL), userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Retryable {
		t.Fatalf("err = %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "OPENROUTER_API_KEY") || !strings.Contains(msg, "No auth credentials") {
		t.Errorf("message %q must name the env var and the provider's reason", msg)
	}
	if strings.Contains(err.Error(), "sk-secret-123") {
		t.Error("error leaks the key")
	}
}

func TestNotFoundNamesModelKey(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Status: 404, Error: "model not found"})
	_, err := run(t, newProvider(srv.URL), userHi)
	if err == nil || !strings.Contains(err.Error(), "model.default") || !strings.Contains(err.Error(), "--model") {
		t.Fatalf("err = %v", err)
	}
}

func TestContextOverflow(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Status: 400, Error: "This model's maximum context length is 8192 tokens"})
	_, err := run(t, newProvider(srv.URL), userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !ae.ContextOverflow || ae.Retryable {
		t.Fatalf("err = %#v", err)
	}
}

func TestRateLimitThenSuccessWithRetry(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Turn{Status: 429, RetryAfter: "7", Error: "slow down"},
		llmtest.Turn{Text: "ok"})
	var slept []time.Duration
	p := llm.WithRetry(newProvider(srv.URL), llm.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}})
	resp, err := run(t, p, userHi)
	if err != nil || resp.Message.Content != "ok" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if len(slept) != 1 || slept[0] != 7*time.Second {
		t.Errorf("slept %v, want [7s] from Retry-After", slept)
	}
}

func TestServerErrorsExhausted(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Status: 500}, llmtest.Turn{Status: 502}, llmtest.Turn{Status: 503}, llmtest.Turn{Status: 500})
	sleeps := 0
	p := llm.WithRetry(newProvider(srv.URL), llm.RetryPolicy{Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }})
	_, err := run(t, p, userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 500 {
		t.Fatalf("err = %v", err)
	}
	if sleeps != 3 || len(srv.Requests()) != 4 {
		t.Errorf("sleeps %d requests %d, want 3 retries after the first attempt", sleeps, len(srv.Requests()))
	}
}

func rawServer(t *testing.T, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestEmptyStreamIsAnError(t *testing.T) {
	_, err := run(t, newProvider(rawServer(t, ": OPENROUTER PROCESSING\n\ndata: [DONE]\n\n")), userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "empty response") {
		t.Fatalf("err = %v, want an empty-response APIError", err)
	}
}

func TestBrokenChunk(t *testing.T) {
	body := `data: {"id":"x","choices":[{"index":0,"delta":{"content":"hel"}}]}` + "\n\n" + `data: {"id":"x","choices":[{"index":0,"delta":` + "\n\n"
	_, err := run(t, newProvider(rawServer(t, body)), userHi)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "malformed") {
		t.Fatalf("err = %v", err)
	}
}

func TestToolCallsAllAtIndexZero(t *testing.T) {
	// Some servers give every call index 0; a new id starts a new call.
	body := `data: {"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]}}]}` + "\n\n" +
		`data: {"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"terminal","arguments":"{\"command\":\"ls\"}"}}]}}]}` + "\n\n" +
		`data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	resp, err := run(t, newProvider(rawServer(t, body)), userHi)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[1].Name != "terminal" || resp.Message.ToolCalls[1].Arguments != `{"command":"ls"}` {
		t.Fatalf("calls = %+v", resp.Message.ToolCalls)
	}
}

func TestConnectionRefusedIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := newProvider(url).Stream(context.Background(), userHi)
	if !llm.IsRetryable(err) {
		t.Fatalf("err = %v, want retryable", err)
	}
}

func TestNullErrorFieldIsNotAnError(t *testing.T) {
	body := `data: {"id":"x","error":null,"choices":[{"index":0,"delta":{"content":"fine"}}]}` + "\n\n" +
		`data: {"id":"x","error":null,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	resp, err := run(t, newProvider(rawServer(t, body)), userHi)
	if err != nil || resp.Message.Content != "fine" {
		t.Fatalf("resp %q err %v", resp.Message.Content, err)
	}
}
