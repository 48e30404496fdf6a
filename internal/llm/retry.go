package llm

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds how WithRetry retries a model call. Zero fields take
// the defaults noted on each.
type RetryPolicy struct {
	// MaxRetries is the number of retries after the first attempt (default 3;
	// negative means none).
	MaxRetries int
	// BaseDelay is the first backoff delay, doubled per retry (default 2s).
	BaseDelay time.Duration
	// MaxDelay caps every delay, including a provider's Retry-After (default 60s).
	MaxDelay time.Duration
	// Sleep waits d or until ctx ends (default: a timer; tests inject a recorder).
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter maps a backoff delay to the delay actually slept (default:
	// uniformly random in [d/2, d]). It is not applied to Retry-After.
	Jitter func(d time.Duration) time.Duration
	// OnRetry, if set, is told about each retry before its sleep (attempt
	// counts from 1), so a UI can say "retrying in 4s". ctx is the context
	// the call was made with: a provider shared by many sessions tells the
	// one whose call is retried by a value its caller put there.
	OnRetry func(ctx context.Context, attempt int, delay time.Duration, err error)
	// NoRetryRefused returns a refused connection (APIError.Refused) at
	// once instead of retrying it: set for a provider that has a fallback
	// after it, which answers instead of waiting out the backoff.
	NoRetryRefused bool
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries == 0 {
		p.MaxRetries = 3
	}
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 2 * time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 60 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleepContext
	}
	if p.Jitter == nil {
		p.Jitter = func(d time.Duration) time.Duration {
			if d <= 1 {
				return d
			}
			return d/2 + rand.N(d/2+1)
		}
	}
	return p
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// delay is the wait before retry number attempt (1-based) after err.
func (p RetryPolicy) delay(attempt int, err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		return min(ae.RetryAfter, p.MaxDelay)
	}
	d := p.BaseDelay << (attempt - 1)
	if d <= 0 || d > p.MaxDelay {
		d = p.MaxDelay
	}
	return p.Jitter(d)
}

// IsRetryable reports whether err is an *APIError marked Retryable.
func IsRetryable(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Retryable
}

// WithRetry wraps p so that a call failing with a Retryable *APIError (429,
// 5xx, overloaded, connection reset, timeout) is repeated with exponential
// backoff and jitter, honouring Retry-After, at most policy.MaxRetries times.
// Other errors (401, 403, 404, bad request, context cancelled) return at
// once. A retry only happens before the first event reached the caller:
// once a stream has delivered an event its errors are returned as they are,
// so the caller never sees a response twice.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	return &retryProvider{inner: p, policy: policy.withDefaults()}
}

type retryProvider struct {
	inner  Provider
	policy RetryPolicy
}

func (r *retryProvider) Name() string { return r.inner.Name() }

func (r *retryProvider) Stream(ctx context.Context, req Request) (Stream, error) {
	rs := &retryStream{ctx: ctx, req: req, p: r}
	if err := rs.open(); err != nil {
		return nil, err
	}
	return rs, nil
}

// retryStream re-opens the inner stream when it fails before its first event.
type retryStream struct {
	ctx       context.Context
	req       Request
	p         *retryProvider
	cur       Stream
	attempt   int
	delivered bool
	err       error
}

// open starts a call, retrying failures of the open itself.
func (s *retryStream) open() error {
	for {
		st, err := s.p.inner.Stream(s.ctx, s.req)
		if err == nil {
			s.cur = st
			return nil
		}
		if werr := s.wait(err); werr != nil {
			return werr
		}
	}
}

// wait sleeps before the next attempt, or returns the error to give up with.
func (s *retryStream) wait(err error) error {
	if !IsRetryable(err) || s.attempt >= s.p.policy.MaxRetries || s.ctx.Err() != nil {
		return err
	}
	var ae *APIError
	if s.p.policy.NoRetryRefused && errors.As(err, &ae) && ae.Refused {
		return err
	}
	s.attempt++
	d := s.p.policy.delay(s.attempt, err)
	if s.p.policy.OnRetry != nil {
		s.p.policy.OnRetry(s.ctx, s.attempt, d, err)
	}
	if serr := s.p.policy.Sleep(s.ctx, d); serr != nil {
		return err
	}
	return nil
}

func (s *retryStream) Next() bool {
	for {
		if s.err != nil || s.cur == nil {
			return false
		}
		if s.cur.Next() {
			s.delivered = true
			return true
		}
		err := s.cur.Err()
		if err == nil || s.delivered {
			return false
		}
		_ = s.cur.Close()
		s.cur = nil
		if werr := s.wait(err); werr != nil {
			s.err = werr
			return false
		}
		if oerr := s.open(); oerr != nil {
			s.err = oerr
			return false
		}
	}
}

func (s *retryStream) Event() Event { return s.cur.Event() }

func (s *retryStream) Err() error {
	if s.err != nil {
		return s.err
	}
	if s.cur != nil {
		return s.cur.Err()
	}
	return nil
}

func (s *retryStream) Close() error {
	if s.cur != nil {
		return s.cur.Close()
	}
	return nil
}
