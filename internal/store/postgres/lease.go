package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is a leader lease: a row of the leases table naming the one
// replica that may do something only one process may do at a time (long
// polling a Telegram bot). The holder renews it before it expires; when
// the holder dies, the row expires and another replica takes it. Expiry
// is on the database's clock (clock_timestamp()), so replicas whose clocks
// disagree still agree on who holds it. The row also keeps a cursor (the
// bot's update offset) that only the holder of an unexpired lease can
// advance, so a replica that lost the lease cannot write over its
// successor's progress.
type Lease struct {
	db     *DB
	name   string
	holder string
	ttl    time.Duration
}

// Lease returns the lease name for holder (unique per process: host, pid
// and a random part), valid ttl after each Acquire or Renew (at least 1 ms).
func (db *DB) Lease(name, holder string, ttl time.Duration) *Lease {
	return &Lease{db: db, name: name, holder: holder, ttl: max(ttl, time.Millisecond)}
}

// TTL is how long the lease lasts after each Acquire or Renew.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Holder is this lease's holder name.
func (l *Lease) Holder() string { return l.holder }

// Acquire takes the lease when nobody holds it, its holder let it expire
// or this holder already holds it, and returns the cursor. held is false
// (and the cursor 0) when another holder's lease is still valid.
func (l *Lease) Acquire(ctx context.Context) (cursor int64, held bool, err error) {
	err = l.db.pool.QueryRow(ctx, `INSERT INTO leases (name, holder, expires_at, acquired_at)
		VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond', clock_timestamp())
		ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
			acquired_at = CASE WHEN leases.holder = EXCLUDED.holder THEN leases.acquired_at ELSE EXCLUDED.acquired_at END
		WHERE leases.expires_at <= clock_timestamp() OR leases.holder = EXCLUDED.holder
		RETURNING cursor`, l.name, l.holder, l.ttl.Microseconds()).Scan(&cursor)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("lease %s: %w", l.name, err)
	}
	return cursor, true, nil
}

// Renew extends a lease this holder still holds by TTL and reports
// whether it did: false means it expired or another holder has it.
func (l *Lease) Renew(ctx context.Context) (bool, error) {
	tag, err := l.db.pool.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
		WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp()`, l.name, l.holder, l.ttl.Microseconds())
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", l.name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Advance stores cursor while this holder's lease is valid and reports
// whether it did (false: the lease was lost; nothing was written).
func (l *Lease) Advance(ctx context.Context, cursor int64) (bool, error) {
	tag, err := l.db.pool.Exec(ctx, `UPDATE leases SET cursor = $3
		WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp()`, l.name, l.holder, cursor)
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", l.name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release ends this holder's lease at once (the cursor stays), so a
// stopping replica hands over without waiting for the expiry.
func (l *Lease) Release(ctx context.Context) error {
	_, err := l.db.pool.Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp()
		WHERE name = $1 AND holder = $2`, l.name, l.holder)
	if err != nil {
		return fmt.Errorf("lease %s: %w", l.name, err)
	}
	return nil
}
