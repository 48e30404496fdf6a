package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/outbox"
)

// claimLease is how long a claimed kept reply is this process's to
// deliver: a replica that dies mid-retry leaves it to another after this.
const claimLease = 5 * time.Minute

// openUndelivered opens the queue of kept replies: cfg.Undelivered, else the
// one the session store chooses (the database's table on PostgreSQL, else
// HERMES_HOME/gateway/undelivered-<platform>.json). It reads the queue
// once, so a broken file stops the start with an error naming it.
func (c *Chat) openUndelivered(ctx context.Context) error {
	c.wake = make(chan struct{}, 1)
	c.out = c.cfg.Undelivered
	if c.out == nil {
		c.out = database.Outbox(c.rt.Store(), c.cfg.Home)
	}
	_, err := c.out.Len(ctx, c.p.Name())
	return err
}

// queued reports whether chat has kept replies (an error counts as yes:
// a new reply goes behind them rather than ahead).
func (c *Chat) queued(ctx context.Context, chat string) bool {
	has, err := c.out.Has(ctx, c.p.Name(), chat)
	if err != nil {
		c.cfg.Warn(fmt.Sprintf("%s: reading the undelivered replies: %v", c.p.Name(), err))
		return true
	}
	return has
}

// add keeps parts for chat, first retried after wait.
func (c *Chat) add(ctx context.Context, chat string, parts []OutMessage, wait time.Duration) error {
	b, err := json.Marshal(parts)
	if err != nil {
		return err
	}
	now := c.cfg.Now()
	err = c.out.Add(context.WithoutCancel(ctx), c.p.Name(), chat, b, now, now.Add(wait))
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return err
}

// retryLoop redelivers kept replies until ctx ends.
func (c *Chat) retryLoop(ctx context.Context) {
	for {
		c.retryDue(ctx)
		wait := time.Minute // replicas sharing a database add without waking us
		if t, err := c.out.Next(ctx, c.p.Name()); err == nil && !t.IsZero() {
			wait = min(max(t.Sub(c.cfg.Now()), 10*time.Millisecond), wait)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-c.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// retryDue claims the due kept replies (each chat's oldest) and tries
// each once (its parts in order). Claims left when ctx ends run out after
// claimLease.
func (c *Chat) retryDue(ctx context.Context) {
	due, err := c.out.Claim(ctx, c.p.Name(), c.cfg.Now(), claimLease)
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Warn(fmt.Sprintf("%s: reading the undelivered replies: %v", c.p.Name(), err))
		}
		return
	}
	for _, e := range due {
		if ctx.Err() != nil {
			return
		}
		c.retryOne(ctx, e)
	}
}

func (c *Chat) retryOne(ctx context.Context, e outbox.Reply) {
	unlock := c.lock(e.Chat)
	defer unlock()
	var parts []OutMessage
	if err := json.Unmarshal(e.Parts, &parts); err != nil {
		c.cfg.Warn(fmt.Sprintf("%s: a kept reply to chat %s is not valid JSON and was dropped: %v", c.p.Name(), e.Chat, err))
		c.settle(ctx, e, nil, time.Time{}, nil)
		return
	}
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
	c.settle(ctx, e, parts, next, err)
	if len(parts) == 0 && err == nil {
		c.cfg.Warn(fmt.Sprintf("%s: a kept reply to chat %s was delivered", c.p.Name(), e.Chat))
	}
}

// settle records the outcome of a retry of e: delivered or dropped (no
// parts left), or the parts still undelivered, retried at next.
func (c *Chat) settle(ctx context.Context, e outbox.Reply, parts []OutMessage, next time.Time, cause error) {
	ctx = context.WithoutCancel(ctx) // a stopping gateway still records what it sent
	var err error
	if len(parts) == 0 {
		err = c.out.Ack(ctx, e.Platform, e.ID)
	} else {
		var b []byte
		if b, err = json.Marshal(parts); err == nil {
			last := ""
			if cause != nil {
				last = cause.Error()
			}
			err = c.out.Retry(ctx, e.Platform, e.ID, b, next, last)
		}
	}
	if err != nil {
		c.cfg.Warn(fmt.Sprintf("%s: saving the undelivered replies: %v", c.p.Name(), err))
	}
}
