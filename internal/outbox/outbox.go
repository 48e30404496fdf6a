// Package outbox is the gateway's queue of delivery obligations: replies a
// chat platform did not take, kept and retried until delivered or too old.
// Two implementations pass one conformance suite (outbox/conformance):
// File, HERMES_HOME/gateway/undelivered-<platform>.json (database.backend:
// sqlite, one process), and the delivery_obligations table of
// internal/store/postgres (database.backend: postgres), where a reply one
// replica could not deliver is retried by whichever replica runs the
// platform.
//
// Order per chat: only the oldest queued reply of a chat (its head) is
// ever claimed, so a chat's later reply is never sent before an earlier
// one still queued.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Reply is one kept reply: Parts is the JSON of the parts not yet
// delivered, in order (the gateway's []OutMessage), stored byte for byte.
type Reply struct {
	ID       int64
	Platform string
	Chat     string
	Parts    json.RawMessage
	Created  time.Time
	Attempts int       // failed redeliveries so far
	NextTry  time.Time // not claimed before this
	LastErr  string
}

// ErrNotClaimed is returned by Ack and Retry for a reply that is not
// claimed (never claimed, or already acknowledged or released).
var ErrNotClaimed = errors.New("delivery obligation is not claimed by this handle")

// Queue keeps delivery obligations. Times are the caller's clock (the
// gateway's ChatConfig.Now); implementations are safe for concurrent use.
type Queue interface {
	// Add appends a reply to the end of chat's queue on platform, created
	// at now and first due at due.
	Add(ctx context.Context, platform, chat string, parts json.RawMessage, now, due time.Time) error
	// Has reports whether chat on platform has a queued reply (claimed or not).
	Has(ctx context.Context, platform, chat string) (bool, error)
	// Len is how many replies platform has queued.
	Len(ctx context.Context, platform string) (int, error)
	// Next is when platform's earliest queued reply may be claimed (the
	// later of its retry time and the end of a claim on it); zero when
	// none is queued.
	Next(ctx context.Context, platform string) (time.Time, error)
	// Claim takes the head reply of every chat of platform whose retry
	// time came and that no other claim holds, for lease: until Ack,
	// Retry or now+lease (a replica that died), no other Claim returns it.
	Claim(ctx context.Context, platform string, now time.Time, lease time.Duration) ([]Reply, error)
	// Ack removes platform's claimed reply id: delivered or dropped.
	Ack(ctx context.Context, platform string, id int64) error
	// Retry releases platform's claimed reply id with the parts still
	// undelivered, one more attempt, lastErr and the next retry time.
	Retry(ctx context.Context, platform string, id int64, parts json.RawMessage, next time.Time, lastErr string) error
}
