package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Retry bounds for a write whose connection was lost (a server restart,
// a primary failover, pg_terminate_backend, an idle connection the
// server closed): it is run again on a new connection after 100 ms,
// doubling up to 2 s, for at most writeRetryFor (DB.retryFor).
const (
	firstRetry    = 100 * time.Millisecond
	maxRetry      = 2 * time.Second
	writeRetryFor = 15 * time.Second
)

// LostError is a write that failed because the database connection was
// lost. Committing is false when the transaction never reached COMMIT
// (nothing of it was saved: PostgreSQL rolls back a transaction whose
// connection ends) and true when the connection was lost during COMMIT
// (it may or may not be saved).
type LostError struct {
	Where      string // the store's Describe
	Committing bool
	Tried      time.Duration // how long the write was retried
	Err        error
}

func (e *LostError) Error() string {
	if e.Committing {
		return fmt.Sprintf("lost the connection to the session store (%s) while committing: the write may or may not be saved: %v", e.Where, e.Err)
	}
	return fmt.Sprintf("the session store (%s) is unreachable (retried for %s): nothing of this write was saved: %v",
		e.Where, e.Tried.Round(time.Second), e.Err)
}

func (e *LostError) Unwrap() error { return e.Err }

// inTx runs fn in a transaction of its own. When the connection is lost
// before COMMIT is sent, the transaction is run again on a new
// connection, with backoff, for up to writeRetryFor (then a *LostError):
// nothing of it was committed, so running it again cannot write twice.
// A connection lost during COMMIT is a *LostError at once (its outcome is
// unknown, so it is not run again); other errors are returned as they are.
func (db *DB) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	start := time.Now()
	wait := firstRetry
	for {
		committing, err := db.txOnce(ctx, fn)
		if err == nil || !connectionLost(err) {
			return err
		}
		if committing {
			return &LostError{Where: db.where, Committing: true, Err: err}
		}
		if ctx.Err() != nil || time.Since(start)+wait > db.retryFor {
			return &LostError{Where: db.where, Tried: time.Since(start), Err: err}
		}
		select {
		case <-ctx.Done():
			return &LostError{Where: db.where, Tried: time.Since(start), Err: err}
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}

// txOnce runs fn in one transaction and reports whether an error came
// from COMMIT.
func (db *DB) txOnce(ctx context.Context, fn func(tx pgx.Tx) error) (committing bool, err error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return false, err
	}
	return true, tx.Commit(ctx)
}

// connectionLost reports whether err means the connection to the server
// failed or was ended (rather than the statement failing on a live one).
func connectionLost(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P01-03: the server shuts down,
		// crashed, or does not accept connections yet.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return pgconn.SafeToRetry(err) || errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "unexpected EOF")
}
