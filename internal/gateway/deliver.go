package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RetryPolicy bounds delivery retries. A part that still fails after
// Attempts tries (or at once for a rate limit longer than MaxWait, a
// revoked token or a chat refusing the bot) is kept in the undelivered
// queue and retried from there with exponential backoff from Base to Max,
// until it is delivered or older than MaxAge (then it is dropped with a
// warning to the operator, never silently).
type RetryPolicy struct {
	Attempts int
	Base     time.Duration
	Max      time.Duration
	MaxWait  time.Duration
	MaxAge   time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 4
	}
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 5 * time.Minute
	}
	if p.MaxWait <= 0 {
		p.MaxWait = time.Minute
	}
	if p.MaxAge <= 0 {
		p.MaxAge = 24 * time.Hour
	}
	return p
}

// backoff is the wait after attempt n (0-based) failed.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.Base
	for i := 0; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Deliver sends text to chat (the adapter's chat address), as cron's
// `<platform>:<chat_id>` delivery does. A reply the platform does not take
// now is kept and retried; the error says only that it could not be kept.
func (c *Chat) Deliver(ctx context.Context, chat, text string) error {
	return c.deliver(ctx, chat, OutMessage{Text: text})
}

// DeliverTo sends text to chatID (and threadID, "" outside threads) as
// cron's "<platform>:<chat_id>[:<thread_id>]" delivery names them. Like
// Deliver, a reply the platform does not take now is kept and retried.
func (c *Chat) DeliverTo(ctx context.Context, chatID, threadID, text string) error {
	addr := chatID
	if a, ok := c.p.(interface {
		Address(chatID, threadID string) string
	}); ok {
		addr = a.Address(chatID, threadID)
	} else if threadID != "" {
		addr = chatID + "/" + threadID
	}
	return c.Deliver(ctx, addr, text)
}

// lock serialises deliveries to one chat, so parts and replies keep
// their order; other chats are not held up.
func (c *Chat) lock(chat string) func() { return c.locks.lock(chat) }

// chatLocks is a mutex per chat with a delivery in progress.
type chatLocks struct {
	mu sync.Mutex
	m  map[string]*chatLock
}

type chatLock struct {
	mu   sync.Mutex
	refs int
}

func (l *chatLocks) lock(key string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*chatLock{}
	}
	cl := l.m[key]
	if cl == nil {
		cl = &chatLock{}
		l.m[key] = cl
	}
	cl.refs++
	l.mu.Unlock()
	cl.mu.Lock()
	return func() {
		cl.mu.Unlock()
		l.mu.Lock()
		if cl.refs--; cl.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}

// deliver splits m at the platform's limit and sends the parts in order;
// parts that cannot be sent now go to the undelivered queue (behind any
// the chat already has there, so order holds).
func (c *Chat) deliver(ctx context.Context, chat string, m OutMessage) error {
	m.Text = c.rt.Redactor().Redact(m.Text)
	parts := splitOut(m, c.p.Limit())
	unlock := c.lock(chat)
	defer unlock()
	if c.queued(ctx, chat) {
		return c.keep(ctx, chat, parts, nil)
	}
	for i, part := range parts {
		if err := c.sendPart(ctx, chat, part); err != nil {
			return c.keep(ctx, chat, parts[i:], err)
		}
	}
	return nil
}

func splitOut(m OutMessage, limit int) []OutMessage {
	var out []OutMessage
	for _, t := range SplitMessage(m.Text, limit) {
		out = append(out, OutMessage{Text: t, Plain: m.Plain})
	}
	return out
}

// keep puts parts into the undelivered queue and tells the operator.
func (c *Chat) keep(ctx context.Context, chat string, parts []OutMessage, cause error) error {
	if err := c.add(ctx, chat, parts, c.cfg.Retry.Base); err != nil {
		c.cfg.Warn(fmt.Sprintf("%s: a reply to chat %s could not be delivered (%v) nor kept for later: %v", c.p.Name(), chat, cause, err))
		return err
	}
	if cause != nil {
		c.cfg.Warn(fmt.Sprintf("%s: a reply to chat %s is kept for redelivery: %v", c.p.Name(), chat, cause))
	}
	return nil
}

// sendPart sends one part: a rate limit is waited out (up to MaxWait), a
// too-long part is split again, a markup error resends it as plain text,
// other errors are retried with backoff up to Attempts.
func (c *Chat) sendPart(ctx context.Context, chat string, m OutMessage) error {
	pol := c.cfg.Retry
	var err error
	limited := 0
	for attempt := 0; attempt < pol.Attempts; attempt++ {
		if _, err = c.p.Send(ctx, chat, m); err == nil {
			return nil
		}
		wait := pol.backoff(attempt)
		var ra *RetryAfterError
		switch {
		case errors.As(err, &ra):
			if ra.After > pol.MaxWait {
				return err
			}
			wait = ra.After
			if limited++; limited < 16 {
				attempt-- // a rate limit is not a failure of the part
			}
		case errors.Is(err, ErrTooLong):
			return c.resplit(ctx, chat, m)
		case errors.Is(err, ErrFormat) && !m.Plain:
			m.Plain = true
			attempt--
			continue
		case errors.Is(err, ErrRevoked), errors.Is(err, ErrUndeliverable), errors.Is(err, ErrFormat):
			return err
		}
		if attempt+1 >= pol.Attempts {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// resplit sends a part the platform found too long as smaller parts.
func (c *Chat) resplit(ctx context.Context, chat string, m OutMessage) error {
	n := utf16Len(m.Text)
	if n < 64 {
		return fmt.Errorf("%w (%d units)", ErrTooLong, n)
	}
	for _, t := range SplitMessage(m.Text, n*2/3) {
		if err := c.sendPart(ctx, chat, OutMessage{Text: t, Plain: m.Plain}); err != nil {
			return err
		}
	}
	return nil
}
