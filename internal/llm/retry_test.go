package llm

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// scripted is a provider whose Nth call opens with openErrs[N] or streams
// events then fails with streamErrs[N].
type scripted struct {
	openErrs   []error
	streamErrs []error
	events     []Event
	calls      int
}

func (s *scripted) Name() string { return "fake" }

func (s *scripted) Stream(context.Context, Request) (Stream, error) {
	n := s.calls
	s.calls++
	if n < len(s.openErrs) && s.openErrs[n] != nil {
		return nil, s.openErrs[n]
	}
	var err error
	var evs []Event
	if n < len(s.streamErrs) && s.streamErrs[n] != nil {
		err = s.streamErrs[n]
	} else {
		evs = s.events
	}
	return &sliceStream{events: evs, err: err}, nil
}

type sliceStream struct {
	events []Event
	pos    int
	err    error
}

func (s *sliceStream) Next() bool {
	if s.pos >= len(s.events) {
		return false
	}
	s.pos++
	return true
}
func (s *sliceStream) Event() Event { return s.events[s.pos-1] }
func (s *sliceStream) Err() error {
	if s.pos >= len(s.events) {
		return s.err
	}
	return nil
}
func (s *sliceStream) Close() error { return nil }

var (
	busy    = &APIError{Provider: "fake", StatusCode: 503, Retryable: true}
	limited = &APIError{Provider: "fake", StatusCode: 429, Retryable: true, RetryAfter: 10 * time.Minute}
	denied  = &APIError{Provider: "fake", StatusCode: 401}
	answer  = []Event{{Type: EventTextDelta, Text: "ok"}, {Type: EventFinish, FinishReason: "stop"}}
)

func policy(slept *[]time.Duration) RetryPolicy {
	return RetryPolicy{
		BaseDelay: time.Second, MaxDelay: 30 * time.Second,
		Jitter: func(d time.Duration) time.Duration { return d },
		Sleep:  func(_ context.Context, d time.Duration) error { *slept = append(*slept, d); return nil },
	}
}

func TestRetryBackoffAndRetryAfterCap(t *testing.T) {
	var slept []time.Duration
	inner := &scripted{openErrs: []error{busy, busy, limited}, events: answer}
	resp, err := Accumulate(must(WithRetry(inner, policy(&slept)).Stream(context.Background(), Request{})), nil)
	if err != nil || resp.Message.Content != "ok" {
		t.Fatalf("%+v %v", resp, err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 30 * time.Second}
	if len(slept) != 3 || slept[0] != want[0] || slept[1] != want[1] || slept[2] != want[2] {
		t.Errorf("slept %v, want %v (exponential, Retry-After capped at MaxDelay)", slept, want)
	}
}

func TestRetryStopsAfterMax(t *testing.T) {
	var slept []time.Duration
	inner := &scripted{openErrs: []error{busy, busy, busy, busy, busy}}
	_, err := WithRetry(inner, policy(&slept)).Stream(context.Background(), Request{})
	if !errors.Is(err, busy) || inner.calls != 4 {
		t.Fatalf("err %v after %d calls, want 4 (1 + 3 retries)", err, inner.calls)
	}
}

func TestNoRetryOnAuthError(t *testing.T) {
	var slept []time.Duration
	inner := &scripted{openErrs: []error{denied}, events: answer}
	_, err := WithRetry(inner, policy(&slept)).Stream(context.Background(), Request{})
	if !errors.Is(err, denied) || inner.calls != 1 || len(slept) != 0 {
		t.Fatalf("err %v calls %d", err, inner.calls)
	}
}

func TestRetryStreamErrorBeforeFirstEvent(t *testing.T) {
	var slept []time.Duration
	inner := &scripted{streamErrs: []error{busy}, events: answer}
	resp, err := Accumulate(must(WithRetry(inner, policy(&slept)).Stream(context.Background(), Request{})), nil)
	if err != nil || resp.Message.Content != "ok" || inner.calls != 2 {
		t.Fatalf("%+v %v calls %d", resp, err, inner.calls)
	}
}

func TestNoRetryAfterEventsDelivered(t *testing.T) {
	var slept []time.Duration
	inner := &scripted{events: []Event{{Type: EventTextDelta, Text: "half"}}}
	p := WithRetry(&partial{inner: inner}, policy(&slept))
	resp, err := Accumulate(must(p.Stream(context.Background(), Request{})), nil)
	if !errors.Is(err, busy) || resp.Message.Content != "half" || len(slept) != 0 {
		t.Fatalf("resp %q err %v slept %v: a stream that delivered text must not be retried", resp.Message.Content, err, slept)
	}
}

// partial streams its events and then fails with busy.
type partial struct{ inner *scripted }

func (p *partial) Name() string { return "fake" }
func (p *partial) Stream(context.Context, Request) (Stream, error) {
	return &sliceStream{events: p.inner.events, err: busy}, nil
}

func TestRetryHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	inner := &scripted{openErrs: []error{busy, busy}}
	_, err := WithRetry(inner, RetryPolicy{}).Stream(ctx, Request{})
	if err == nil || inner.calls != 1 {
		t.Fatalf("err %v calls %d", err, inner.calls)
	}
}

func TestDefaultJitterBounds(t *testing.T) {
	p := RetryPolicy{}.withDefaults()
	for range 100 {
		if d := p.Jitter(4 * time.Second); d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("jitter %v outside [2s, 4s]", d)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"1.5":                           1500 * time.Millisecond,
		"junk":                          0,
		"99999":                         5 * time.Minute,
		"Mon, 30 Nov 2026 12:00:20 GMT": 20 * time.Second,
	} {
		if got := ParseRetryAfter(in, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestHTTPErrorMapping(t *testing.T) {
	hints := ErrorHints{KeyFix: "set OPENAI_API_KEY"}
	h := http.Header{"Retry-After": {"4"}}
	cases := []struct {
		status        int
		retry, ctxErr bool
		fix           string
	}{
		{401, false, false, "set OPENAI_API_KEY"},
		{403, false, false, "set OPENAI_API_KEY"},
		{404, false, false, DefaultModelFix},
		{429, true, false, ""},
		{500, true, false, ""},
		{529, true, false, ""},
		{400, false, false, ""},
	}
	for _, c := range cases {
		e := HTTPError("openai", c.status, "nope", h, hints, time.Now())
		if e.Retryable != c.retry || e.Fix != c.fix || e.RetryAfter != 4*time.Second {
			t.Errorf("status %d: %+v", c.status, e)
		}
	}
	if e := HTTPError("openai", 400, "context_length_exceeded", nil, hints, time.Now()); !e.ContextOverflow {
		t.Error("context overflow not detected")
	}
}

func must(s Stream, err error) Stream {
	if err != nil {
		return &sliceStream{err: err}
	}
	return s
}
