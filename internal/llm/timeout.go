package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Default timeouts of a model call (config model.request_timeout and
// model.stream_idle_timeout): a local model may take minutes to load before
// its first byte, and a reasoning model may think for a while between
// events, but a server that accepts a request and never answers must not
// hang hermes forever.
const (
	DefaultRequestTimeout    = 300 * time.Second
	DefaultStreamIdleTimeout = 120 * time.Second
)

// Timeouts bounds the waits of a model call: Request from sending the
// request to the first stream event (connect, headers, first chunk), Idle
// between two events once streaming. Zero takes the default; negative
// disables that bound.
type Timeouts struct {
	Request time.Duration
	Idle    time.Duration
}

// errNoData is the cancel cause of a call whose timer fired.
type errNoData struct{ wait time.Duration }

func (e errNoData) Error() string { return fmt.Sprintf("no data for %s", e.wait) }

// WithTimeouts wraps p so that a call with no data for the Request (before
// the first event) or Idle (between events) duration is cancelled and fails
// with a Retryable *APIError "no data from PROVIDER for N s", which
// WithRetry (wrapped around it) retries like other transient errors.
func WithTimeouts(p Provider, t Timeouts) Provider {
	if t.Request == 0 {
		t.Request = DefaultRequestTimeout
	}
	if t.Idle == 0 {
		t.Idle = DefaultStreamIdleTimeout
	}
	return &timeoutProvider{inner: p, t: t}
}

type timeoutProvider struct {
	inner Provider
	t     Timeouts
}

func (p *timeoutProvider) Name() string { return p.inner.Name() }

func (p *timeoutProvider) Stream(ctx context.Context, req Request) (Stream, error) {
	cctx, cancel := context.WithCancelCause(ctx)
	s := &timeoutStream{p: p, ctx: cctx, cancel: cancel}
	s.arm(p.t.Request)
	st, err := p.inner.Stream(cctx, req)
	if err != nil {
		err = s.mapErr(err)
		s.stop()
		return nil, err
	}
	s.inner = st
	return s, nil
}

type timeoutStream struct {
	p      *timeoutProvider
	ctx    context.Context
	cancel context.CancelCauseFunc
	inner  Stream

	mu    sync.Mutex
	timer *time.Timer
	wait  time.Duration
}

// arm (re)starts the no-data timer for d (d < 0: no timer).
func (s *timeoutStream) arm(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if d < 0 {
		return
	}
	s.wait = d
	s.timer = time.AfterFunc(d, func() { s.cancel(errNoData{d}) })
}

func (s *timeoutStream) stop() {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.cancel(nil)
}

// mapErr turns the error of a call cancelled by the timer into the
// Retryable "no data" *APIError.
func (s *timeoutStream) mapErr(err error) error {
	var nd errNoData
	if err == nil || !errors.As(context.Cause(s.ctx), &nd) {
		return err
	}
	return &APIError{Provider: s.p.Name(), Retryable: true,
		Message: fmt.Sprintf("no data from %s for %g s (the server accepted the request but sent nothing; "+
			"raise model.request_timeout or model.stream_idle_timeout for a slow model)", s.p.Name(), nd.wait.Seconds())}
}

func (s *timeoutStream) Next() bool {
	if s.inner.Next() {
		s.arm(s.p.t.Idle)
		return true
	}
	return false
}

func (s *timeoutStream) Event() Event { return s.inner.Event() }

func (s *timeoutStream) Err() error {
	err := s.inner.Err()
	if err == nil {
		var nd errNoData
		if errors.As(context.Cause(s.ctx), &nd) {
			// The stream ended quietly because its context was cancelled.
			return s.mapErr(context.Canceled)
		}
	}
	return s.mapErr(err)
}

func (s *timeoutStream) Close() error {
	err := s.inner.Close()
	s.stop()
	return err
}
