package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/atomicfile"
)

// outbox is the persistent queue of replies a platform did not take:
// HERMES_HOME/gateway/undelivered-<platform>.json, rewritten atomically
// on every change, so a restart delivers what a killed run kept.
type outbox struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	entries []pending
	seq     int64
	wake    chan struct{}
}

// pending is one kept reply (the parts not yet delivered, in order).
type pending struct {
	ID       int64        `json:"id"`
	Chat     string       `json:"chat"`
	Parts    []OutMessage `json:"parts"`
	Created  time.Time    `json:"created"`
	Attempts int          `json:"attempts"`
	NextAt   time.Time    `json:"next_at"`
	LastErr  string       `json:"last_error,omitempty"`
}

func openOutbox(home, platform string, now func() time.Time) (*outbox, error) {
	o := &outbox{now: now, wake: make(chan struct{}, 1)}
	if home == "" {
		return o, nil // no HERMES_HOME (tests of adapters alone): memory only
	}
	o.path = filepath.Join(home, "gateway", "undelivered-"+platform+".json")
	b, err := os.ReadFile(o.path)
	if errors.Is(err, os.ErrNotExist) {
		return o, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading undelivered replies: %w", err)
	}
	if err := json.Unmarshal(b, &o.entries); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%v): fix or remove it (it holds replies not yet delivered)", o.path, err)
	}
	for i := range o.entries {
		o.seq = max(o.seq, o.entries[i].ID)
		o.entries[i].NextAt = time.Time{} // a restart retries at once
	}
	return o, nil
}

// saveLocked writes the queue; o.mu is held.
func (o *outbox) saveLocked() error {
	if o.path == "" {
		return nil
	}
	if len(o.entries) == 0 {
		if err := os.Remove(o.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(o.entries, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(o.path, b, 0o600)
}

func (o *outbox) has(chat string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.entries {
		if e.Chat == chat {
			return true
		}
	}
	return false
}

func (o *outbox) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.entries)
}

func (o *outbox) add(chat string, parts []OutMessage, wait time.Duration) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seq++
	now := o.now()
	o.entries = append(o.entries, pending{ID: o.seq, Chat: chat, Parts: parts, Created: now, NextAt: now.Add(wait)})
	err := o.saveLocked()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return err
}

// due returns the first kept reply of each chat whose retry time came.
func (o *outbox) due() []pending {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	seen := map[string]bool{}
	var out []pending
	for _, e := range o.entries {
		if seen[e.Chat] {
			continue
		}
		seen[e.Chat] = true
		if !e.NextAt.After(now) {
			out = append(out, e)
		}
	}
	return out
}

// next is when the earliest kept reply is due (zero when none is kept).
func (o *outbox) next() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var t time.Time
	for _, e := range o.entries {
		if t.IsZero() || e.NextAt.Before(t) {
			t = e.NextAt
		}
	}
	return t
}

// update stores the outcome of a retry of entry id: the parts still
// undelivered (none removes it) and, on failure, the next retry time.
func (o *outbox) update(id int64, parts []OutMessage, next time.Time, lastErr error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.entries {
		e := &o.entries[i]
		if e.ID != id {
			continue
		}
		if len(parts) == 0 {
			o.entries = append(o.entries[:i], o.entries[i+1:]...)
		} else {
			e.Parts, e.NextAt = parts, next
			e.Attempts++
			if lastErr != nil {
				e.LastErr = lastErr.Error()
			}
		}
		return o.saveLocked()
	}
	return nil
}

// retryLoop redelivers kept replies until ctx ends.
func (c *Chat) retryLoop(ctx context.Context) {
	for {
		c.retryDue(ctx)
		wait := time.Minute
		if t := c.out.next(); !t.IsZero() {
			wait = max(t.Sub(c.cfg.Now()), 10*time.Millisecond)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-c.out.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// retryDue tries each due kept reply once (its parts in order).
func (c *Chat) retryDue(ctx context.Context) {
	for _, e := range c.out.due() {
		if ctx.Err() != nil {
			return
		}
		c.retryOne(ctx, e)
	}
}

func (c *Chat) retryOne(ctx context.Context, e pending) {
	unlock := c.lock(e.Chat)
	defer unlock()
	parts := e.Parts
	var err error
	for len(parts) > 0 {
		if _, err = c.p.Send(ctx, e.Chat, parts[0]); err != nil {
			var ra *RetryAfterError
			if errors.As(err, &ra) {
				break
			}
			if errors.Is(err, ErrTooLong) || errors.Is(err, ErrFormat) {
				err = c.sendPart(ctx, e.Chat, parts[0]) // re-split / plain
				if err != nil {
					break
				}
			} else {
				break
			}
		}
		parts = parts[1:]
	}
	now := c.cfg.Now()
	if len(parts) > 0 && now.Sub(e.Created) > c.cfg.Retry.MaxAge {
		c.cfg.Warn(fmt.Sprintf("%s: a reply to chat %s was dropped after %s undelivered (%d parts; last error: %v)",
			c.p.Name(), e.Chat, c.cfg.Retry.MaxAge, len(parts), err))
		parts = nil
	}
	next := now.Add(c.cfg.Retry.backoff(e.Attempts + 1))
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		next = now.Add(ra.After)
	}
	if uerr := c.out.update(e.ID, parts, next, err); uerr != nil {
		c.cfg.Warn(fmt.Sprintf("%s: saving the undelivered replies: %v", c.p.Name(), uerr))
	}
	if len(parts) == 0 && err == nil {
		c.cfg.Warn(fmt.Sprintf("%s: a kept reply to chat %s was delivered", c.p.Name(), e.Chat))
	}
}
