package openai

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

const textChunk = `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Partial "}}]}` + "\n\n"

// streamErrorShapes are the error payloads providers send inside a 200
// stream, each with the words the person must see and whether repeating
// the request can succeed.
var streamErrorShapes = []struct {
	name, body, words string
	retryable         bool
}{
	{"flat error_type and error_message, choices null (LiteLLM)",
		`data: {"id":"x","choices":null,"error_type":"BadRequestError","error_message":"context length exceeded"}` + "\n\n",
		"context length exceeded", false},
	{"top-level error object",
		`data: {"error":{"message":"This model's maximum context length is 4096 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}` + "\n\n",
		"maximum context length is 4096 tokens", false},
	{"top-level error string",
		`data: {"error":"Invalid 'messages[2].content': string too long"}` + "\n\n",
		"string too long", false},
	{"event: error with a message object",
		"event: error\n" + `data: {"message":"Provider returned error: invalid tool schema","code":400}` + "\n\n",
		"invalid tool schema", false},
	{"event: error with plain text",
		"event: error\ndata: upstream rejected the request: bad request\n\n",
		"upstream rejected the request", false},
	{"event: error after partial text",
		textChunk + "event: error\n" + `data: {"type":"error","message":"Bad request: unsupported parameter 'top_k'","status_code":400}` + "\n\n",
		"unsupported parameter 'top_k'", false},
	{"error chunk after partial text, numeric 400 code",
		textChunk + `data: {"id":"x","error":{"message":"tool_choice is invalid","code":400}}` + "\n\n",
		"tool_choice is invalid", false},
	{"event: error saying overloaded",
		"event: error\n" + `data: {"type":"error","error_type":"overloaded_error","message":"Overloaded"}` + "\n\n",
		"Overloaded", true},
	{"flat error with status 503",
		`data: {"choices":null,"error_type":"ServiceUnavailableError","error_message":"upstream unavailable","status_code":503}` + "\n\n",
		"upstream unavailable", true},
}

// TestStreamErrorShapes: every shape ends the call with an *llm.APIError
// carrying the provider's words (never "empty response"), and only errors
// that can succeed on a repeat are retried: a 400-class error is sent once.
func TestStreamErrorShapes(t *testing.T) {
	for _, c := range streamErrorShapes {
		t.Run(c.name, func(t *testing.T) {
			turns := make([]llmtest.Turn, 4)
			for i := range turns {
				turns[i] = llmtest.Turn{RawBody: c.body}
			}
			srv := llmtest.NewServer(t, turns...)
			var slept []time.Duration
			p := llm.WithRetry(newProvider(srv.URL), llm.RetryPolicy{MaxRetries: 3,
				Sleep:  func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil },
				Jitter: func(d time.Duration) time.Duration { return d }})
			_, err := run(t, p, userHi)
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *llm.APIError", err, err)
			}
			if !strings.Contains(err.Error(), c.words) {
				t.Errorf("error %q does not carry the provider's words %q", err, c.words)
			}
			if strings.Contains(err.Error(), "empty response") {
				t.Errorf("error %q reports an empty response instead of the provider's error", err)
			}
			if ae.Retryable != c.retryable {
				t.Errorf("Retryable = %v, want %v (%v)", ae.Retryable, c.retryable, err)
			}
			want := 1
			if c.retryable && !strings.HasPrefix(c.body, textChunk) {
				want = 4
			}
			if n := len(srv.Requests()); n != want {
				t.Errorf("%d requests, want %d (sleeps %v)", n, want, slept)
			}
		})
	}
}

// TestErrorWordsInOrdinaryChunksAreNotErrors: text that merely mentions
// error fields, and null error fields, are ordinary chunks.
func TestErrorWordsInOrdinaryChunksAreNotErrors(t *testing.T) {
	body := `data: {"id":"x","error_type":null,"error_message":null,"choices":[{"index":0,"delta":{"content":"the \"error_message\" field"}}]}` + "\n\n" +
		`data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	srv := llmtest.NewServer(t, llmtest.Turn{RawBody: body})
	resp, err := run(t, newProvider(srv.URL), userHi)
	if err != nil || resp.Message.Content != `the "error_message" field` {
		t.Fatalf("resp %q err %v", resp.Message.Content, err)
	}
}
