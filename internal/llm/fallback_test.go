package llm

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

func TestFallsBackOnlyOnErrorsAnotherProviderMayNotShare(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&APIError{StatusCode: 429, Retryable: true}, true},
		{&APIError{StatusCode: 503, Retryable: true}, true},
		{&APIError{StatusCode: 401}, true},
		{&APIError{StatusCode: 404}, true},
		{&APIError{StatusCode: 400, Message: "model_not_found: the model x does not exist"}, true},
		{TransportError("p", &wrapped{syscall.ECONNREFUSED}), true},
		{&APIError{StatusCode: 400, Message: "invalid tool schema"}, false},
		{&APIError{StatusCode: 400, Message: "maximum context length exceeded", ContextOverflow: true}, false},
		{context.Canceled, false},
		{errors.New("store failed"), false},
	} {
		if got := FallsBack(c.err); got != c.want {
			t.Errorf("FallsBack(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "dial tcp: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// TestRefusedConnectionGivesUpAtOnceWhenAFallbackWaits: with
// NoRetryRefused a refused connection is not retried; other connection
// failures still are.
func TestRefusedConnectionGivesUpAtOnceWhenAFallbackWaits(t *testing.T) {
	refused := TransportError("p", &wrapped{syscall.ECONNREFUSED})
	var slept []time.Duration
	p := policy(&slept)
	p.NoRetryRefused = true
	inner := &scripted{openErrs: []error{refused, refused}, events: answer}
	if _, err := WithRetry(inner, p).Stream(context.Background(), Request{}); !errors.Is(err, syscall.ECONNREFUSED) && err != refused {
		t.Fatalf("err %v", err)
	}
	if inner.calls != 1 || len(slept) != 0 {
		t.Fatalf("%d calls, slept %v", inner.calls, slept)
	}
	reset := TransportError("p", &wrapped{syscall.ECONNRESET})
	inner = &scripted{openErrs: []error{reset}, events: answer}
	if _, err := WithRetry(inner, p).Stream(context.Background(), Request{}); err != nil || inner.calls != 2 {
		t.Fatalf("reset not retried: %v after %d calls", err, inner.calls)
	}
}
