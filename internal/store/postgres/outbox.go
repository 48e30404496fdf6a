package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/internal/outbox"
)

// Outbox is outbox.Queue in table delivery_obligations (schema version 6):
// a reply one replica could not deliver is retried by whichever replica
// runs the platform. The id (an identity column) orders a chat's replies;
// Claim takes heads with FOR UPDATE SKIP LOCKED and marks them with a
// lease (claimed_until), so two replicas never hold one reply and a
// replica that died mid-delivery leaves its claim to run out.
type Outbox struct{ db *DB }

var _ outbox.Queue = Outbox{}

// Outbox returns the database's delivery obligations.
func (db *DB) Outbox() Outbox { return Outbox{db: db} }

// Add implements outbox.Queue.
func (o Outbox) Add(ctx context.Context, platform, chat string, parts json.RawMessage, now, due time.Time) error {
	_, err := o.db.pool.Exec(ctx, `INSERT INTO delivery_obligations (platform, chat, parts, next_try, created)
		VALUES ($1, $2, $3, $4, $5)`, platform, chat, string(parts), millis(due), millis(now))
	if err != nil {
		return fmt.Errorf("keeping a reply to %s chat %s in %s: %w", platform, chat, o.db.where, err)
	}
	return nil
}

// Has implements outbox.Queue.
func (o Outbox) Has(ctx context.Context, platform, chat string) (bool, error) {
	var has bool
	err := o.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_obligations WHERE platform = $1 AND chat = $2)`,
		platform, chat).Scan(&has)
	if err != nil {
		return false, fmt.Errorf("undelivered replies of %s chat %s in %s: %w", platform, chat, o.db.where, err)
	}
	return has, nil
}

// Len implements outbox.Queue.
func (o Outbox) Len(ctx context.Context, platform string) (int, error) {
	var n int
	if err := o.db.pool.QueryRow(ctx, `SELECT count(*) FROM delivery_obligations WHERE platform = $1`, platform).Scan(&n); err != nil {
		return 0, fmt.Errorf("undelivered replies of %s in %s: %w", platform, o.db.where, err)
	}
	return n, nil
}

// Next implements outbox.Queue.
func (o Outbox) Next(ctx context.Context, platform string) (time.Time, error) {
	var at *int64
	err := o.db.pool.QueryRow(ctx, `SELECT min(greatest(next_try, claimed_until)) FROM delivery_obligations WHERE platform = $1`,
		platform).Scan(&at)
	if err != nil {
		return time.Time{}, fmt.Errorf("undelivered replies of %s in %s: %w", platform, o.db.where, err)
	}
	if at == nil {
		return time.Time{}, nil
	}
	return fromMillis(*at), nil
}

// Claim implements outbox.Queue. A head is a chat's row with the smallest
// id; a locked head (another replica claiming it now) is skipped, and so
// is the chat, so order holds.
func (o Outbox) Claim(ctx context.Context, platform string, now time.Time, lease time.Duration) ([]outbox.Reply, error) {
	var out []outbox.Reply
	err := pgx.BeginFunc(ctx, o.db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT d.id, d.chat, d.parts, d.created, d.attempts, d.next_try, d.last_error
			FROM delivery_obligations d
			WHERE d.platform = $1 AND d.next_try <= $2 AND d.claimed_until <= $2
			  AND NOT EXISTS (SELECT 1 FROM delivery_obligations e
			                  WHERE e.platform = d.platform AND e.chat = d.chat AND e.id < d.id)
			ORDER BY d.id
			FOR UPDATE SKIP LOCKED`, platform, millis(now))
		if err != nil {
			return err
		}
		for rows.Next() {
			r := outbox.Reply{Platform: platform}
			var parts string
			var created, next int64
			if err := rows.Scan(&r.ID, &r.Chat, &parts, &created, &r.Attempts, &next, &r.LastErr); err != nil {
				return err
			}
			r.Parts, r.Created, r.NextTry = json.RawMessage(parts), fromMillis(created), fromMillis(next)
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		ids := make([]int64, len(out))
		for i, r := range out {
			ids[i] = r.ID
		}
		_, err = tx.Exec(ctx, `UPDATE delivery_obligations SET claimed_until = $2 WHERE id = ANY($1)`,
			ids, millis(now.Add(lease)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claiming undelivered replies of %s in %s: %w", platform, o.db.where, err)
	}
	return out, nil
}

// Ack implements outbox.Queue.
func (o Outbox) Ack(ctx context.Context, platform string, id int64) error {
	tag, err := o.db.pool.Exec(ctx, `DELETE FROM delivery_obligations WHERE platform = $1 AND id = $2 AND claimed_until > 0`,
		platform, id)
	return o.settled(tag.RowsAffected(), err, platform, id)
}

// Retry implements outbox.Queue.
func (o Outbox) Retry(ctx context.Context, platform string, id int64, parts json.RawMessage, next time.Time, lastErr string) error {
	tag, err := o.db.pool.Exec(ctx, `UPDATE delivery_obligations
		SET parts = $3, next_try = $4, last_error = $5, attempts = attempts + 1, claimed_until = 0
		WHERE platform = $1 AND id = $2 AND claimed_until > 0`, platform, id, string(parts), millis(next), lastErr)
	return o.settled(tag.RowsAffected(), err, platform, id)
}

func (o Outbox) settled(n int64, err error, platform string, id int64) error {
	if err != nil {
		return fmt.Errorf("saving undelivered reply %d of %s in %s: %w", id, platform, o.db.where, err)
	}
	if n == 0 {
		return fmt.Errorf("undelivered reply %d of %s: %w", id, platform, outbox.ErrNotClaimed)
	}
	return nil
}
