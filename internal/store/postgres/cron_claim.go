package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-go/hermes/internal/cron"
)

// cronLockKey is a job's run-lock key (the two-key advisory lock form,
// apart from the sessions' one-key locks): $1 the schema's namespace, $2
// the job id.
const cronLockKey = `$1::integer, hashtext('cron:' || $2)`

// Claim implements cron.Jobs (see Cron).
func (c *Cron) Claim(now time.Time, ref string, take func(*cron.Job) error) ([]cron.Claimed, error) {
	ctx := context.Background()
	var out []cron.Claimed
	err := c.db.inTx(ctx, func(tx pgx.Tx) error {
		jobs, err := c.claimable(ctx, tx, now, ref)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			unlock, got, err := c.runLock(ctx, j.ID)
			if err != nil {
				return err
			}
			if !got {
				if ref != "" {
					return jobError{cron.RunningError(j)}
				}
				continue
			}
			taken := j
			if err := take(&taken); err != nil {
				unlock()
				if ref != "" {
					return jobError{err}
				}
				continue
			}
			out = append(out, cron.Claimed{Job: taken, Release: unlock})
			if err := c.write(ctx, tx, taken, false); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, cl := range out {
			cl.Release()
		}
		return nil, c.fail("claiming jobs", err)
	}
	return out, nil
}

// claimable selects, locked in tx, the job ref names or, with ref "", the
// jobs due at now that no other transaction is claiming (SKIP LOCKED).
func (c *Cron) claimable(ctx context.Context, tx pgx.Tx, now time.Time, ref string) ([]cron.Job, error) {
	if ref != "" {
		sql, args := byRef(ref, " FOR UPDATE")
		jobs, err := queryJobs(ctx, tx, sql, args...)
		if err != nil {
			return nil, err
		}
		i, err := cron.Find(jobs, ref)
		if err != nil {
			return nil, jobError{err}
		}
		return jobs[i : i+1], nil
	}
	jobs, err := queryJobs(ctx, tx, `SELECT job FROM cron_jobs WHERE NOT paused AND next_run_at IS NOT NULL
		AND next_run_at <= $1 ORDER BY next_run_at, id FOR UPDATE SKIP LOCKED`, millis(now))
	if err != nil {
		return nil, err
	}
	due := jobs[:0]
	for _, j := range jobs {
		if j.Due(now) {
			due = append(due, j)
		}
	}
	return due, nil
}

// runLock takes job id's run lock on this Cron's lock connection: got is
// false when another process holds it, or this one (a session's advisory
// locks nest, so the ids held are kept here too).
func (c *Cron) runLock(ctx context.Context, id string) (unlock func(), got bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[id] {
		return nil, false, nil
	}
	if err := c.connect(ctx); err != nil {
		return nil, false, err
	}
	if err := c.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock("+cronLockKey+")", c.ns(), id).Scan(&got); err != nil {
		c.dropConn()
		return nil, false, fmt.Errorf("run lock of cron job %s: %w", id, err)
	}
	if !got {
		return nil, false, nil
	}
	c.held[id] = true
	return func() { c.runUnlock(id) }, true, nil
}

// runUnlock frees job id's run lock.
func (c *Cron) runUnlock(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held[id] {
		return
	}
	delete(c.held, id)
	if c.conn == nil || !c.db.holds(c.conn) {
		return // the connection is gone, and the lock with it
	}
	if _, err := c.conn.Exec(context.Background(), "SELECT pg_advisory_unlock("+cronLockKey+")", c.ns(), id); err != nil {
		c.dropConn() // closing the connection frees its locks
	}
}

// ns is the schema's advisory-lock namespace as a 32-bit key.
func (c *Cron) ns() int32 { return int32(uint32(c.db.lockNS >> 32)) }

// connect makes sure c.conn is a live lock connection (c.mu held).
func (c *Cron) connect(ctx context.Context) error {
	if c.conn != nil && c.db.holds(c.conn) {
		return nil
	}
	conn, err := c.db.locks.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("cron run locks: %w", err)
	}
	c.db.heldMu.Lock()
	c.db.held[conn] = true
	c.db.heldMu.Unlock()
	c.conn = conn
	return nil
}

// dropConn closes the lock connection, which frees its locks (c.mu held).
// The ids in held stay held: their runs go on in this process.
func (c *Cron) dropConn() {
	if c.conn == nil {
		return
	}
	conn := c.conn
	c.conn = nil
	c.db.heldMu.Lock()
	mine := c.db.held[conn]
	delete(c.db.held, conn)
	c.db.heldMu.Unlock()
	if mine {
		_ = conn.Conn().Close(context.Background())
		conn.Release()
	}
}

// holds reports whether conn is still a held lock connection (Close takes
// them all).
func (db *DB) holds(conn *pgxpool.Conn) bool {
	db.heldMu.Lock()
	defer db.heldMu.Unlock()
	return db.held[conn]
}
