package providers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// noSleep is a retry policy that does not wait and records the retries.
func noSleep(retries *[]string) llm.RetryPolicy {
	return llm.RetryPolicy{
		Sleep:   func(context.Context, time.Duration) error { return nil },
		OnRetry: func(_ context.Context, _ int, _ time.Duration, err error) { *retries = append(*retries, err.Error()) },
	}
}

func custom(url string, retries *[]string, t llm.Timeouts) llm.Provider {
	p, err := New(Options{Provider: "custom", Model: "m", BaseURL: url, Retry: noSleep(retries), Timeouts: t})
	if err != nil {
		panic(err)
	}
	return p
}

// A server that accepts the request and never answers used to hang hermes
// forever; now the call gives up after model.request_timeout, says so, and
// is retried like other transient errors.
func TestServerThatNeverAnswersIsRetried(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Stall: true}, llmtest.Turn{Text: "answered"})
	var retries []string
	resp, err := ask(t, custom(srv.URL, &retries, llm.Timeouts{Request: 300 * time.Millisecond}))
	if err != nil || resp.Message.Content != "answered" {
		t.Fatalf("resp = %+v, %v", resp.Message, err)
	}
	if len(retries) != 1 || !strings.Contains(retries[0], "no data from custom for 0.3 s") {
		t.Errorf("retries = %q", retries)
	}
}

// Every attempt stalling ends with the clear error, not a hang.
func TestStallEveryAttemptFailsClearly(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Stall: true}, llmtest.Turn{Stall: true}, llmtest.Turn{Stall: true}, llmtest.Turn{Stall: true})
	var retries []string
	_, err := ask(t, custom(srv.URL, &retries, llm.Timeouts{Request: 100 * time.Millisecond}))
	var ae *llm.APIError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "no data from custom") || !strings.Contains(err.Error(), "model.request_timeout") {
		t.Fatalf("err = %v", err)
	}
	if len(retries) != 3 {
		t.Errorf("%d retries, want 3", len(retries))
	}
}

// A stream that stops mid-answer fails after model.stream_idle_timeout
// with the same message (the agent retries the whole call).
func TestStreamIdleTimeout(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "partial answer", ChunkSize: 4, StallAfterFrames: 4})
	var retries []string
	resp, err := ask(t, custom(srv.URL, &retries, llm.Timeouts{Idle: 200 * time.Millisecond}))
	if err == nil || !strings.Contains(err.Error(), "no data from custom for 0.2 s") || !llm.IsRetryable(err) {
		t.Fatalf("err = %v (resp %q)", err, resp.Message.Content)
	}
}

// A 200 answer that is an HTML page (a base URL pointing at a website or
// a login portal) says what was received instead of a stream error.
func TestHTMLBodyIsReported(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{ContentType: "text/html; charset=utf-8",
		RawBody: "<!doctype html><html><head><title>Sign in - Corp Proxy</title></head><body>login</body></html>"})
	var retries []string
	_, err := ask(t, custom(srv.URL, &retries, llm.Timeouts{}))
	if err == nil || !strings.Contains(err.Error(), `HTML page titled "Sign in - Corp Proxy"`) || !strings.Contains(err.Error(), "base URL") {
		t.Fatalf("err = %v", err)
	}
	if len(retries) != 0 {
		t.Errorf("an HTML page was retried: %q", retries)
	}
}

// A connection closed before any event is retried like a 5xx.
func TestConnectionClosedBeforeAnswerIsRetried(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Turn{Text: "x", CutAfterFrames: 1}, llmtest.Turn{Text: "second try"})
	var retries []string
	resp, err := ask(t, custom(srv.URL, &retries, llm.Timeouts{}))
	if err != nil || resp.Message.Content != "second try" || len(retries) != 1 {
		t.Fatalf("resp = %q, %v, retries %q", resp.Message.Content, err, retries)
	}
}
