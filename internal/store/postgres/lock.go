package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-go/hermes/internal/store"
)

// lockKey is the advisory-lock key of a session: this schema's namespace
// plus the 32-bit hashtext of the id (PruneEmpty computes the same).
const lockKey = `$1::bigint + (hashtext($2)::bigint & 4294967295)`

// LockSession takes a session's turn lock: a session-level advisory lock
// on a connection kept for the turn (from a pool of its own). PostgreSQL
// releases it when that connection ends, so when the holder dies (kill -9,
// a lost machine once TCP keepalive gives up on it) any replica can take
// the session over. session_locks records who holds it, for the
// *store.BusyError another caller gets at once.
func (db *DB) LockSession(ctx context.Context, sessionID, owner string) (unlock func(), err error) {
	var tok [8]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tok[:])
	conn, err := db.locks.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock session %s: %w", sessionID, err)
	}
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock("+lockKey+")", db.lockNS, sessionID).Scan(&got); err != nil {
		conn.Release()
		return nil, fmt.Errorf("lock session %s: %w", sessionID, err)
	}
	if !got {
		conn.Release()
		return nil, db.busy(ctx, sessionID)
	}
	host, _ := os.Hostname()
	if _, err := conn.Exec(ctx, `INSERT INTO session_locks (session_id, owner, token, pid, host, acquired_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (session_id) DO UPDATE SET owner = $2, token = $3, pid = $4,
		host = $5, acquired_at = $6`, sessionID, owner, token, os.Getpid(), host, millis(db.now())); err != nil {
		release(conn, db.lockNS, sessionID)
		return nil, fmt.Errorf("lock session %s: %w", sessionID, err)
	}
	db.heldMu.Lock()
	db.held[conn] = true
	if db.turnLocks == nil {
		db.turnLocks = map[string]uint32{}
	}
	db.turnLocks[sessionID] = conn.Conn().PgConn().PID()
	db.heldMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			db.heldMu.Lock()
			mine := db.held[conn]
			delete(db.held, conn)
			delete(db.turnLocks, sessionID)
			db.heldMu.Unlock()
			if !mine {
				return // Close took it
			}
			bg := context.WithoutCancel(ctx)
			_, _ = conn.Exec(bg, "DELETE FROM session_locks WHERE session_id = $1 AND token = $2", sessionID, token)
			release(conn, db.lockNS, sessionID)
		})
	}, nil
}

// release gives the advisory lock back and returns the connection to
// its pool; a connection that cannot unlock is closed, which unlocks.
func release(conn *pgxpool.Conn, ns int64, sessionID string) {
	if _, err := conn.Exec(context.Background(), "SELECT pg_advisory_unlock("+lockKey+")", ns, sessionID); err != nil {
		_ = conn.Conn().Close(context.Background())
	}
	conn.Release()
}

// busy describes the holder of a session's lock.
func (db *DB) busy(ctx context.Context, sessionID string) error {
	b := &store.BusyError{SessionID: sessionID, Owner: "another hermes process"}
	var host string
	var acquired int64
	err := db.pool.QueryRow(ctx, "SELECT owner, pid, host, acquired_at FROM session_locks WHERE session_id = $1", sessionID).
		Scan(&b.Owner, &b.PID, &host, &acquired)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("lock session %s: %w", sessionID, err)
	}
	if err == nil {
		b.Since = fromMillis(acquired)
		if me, _ := os.Hostname(); host != "" && host != me {
			b.Owner += " on " + host
		}
	}
	return b
}

// ErrTurnLockLost is the error of a write to a session whose turn lock
// this process took and no longer holds (its lock connection was cut, so
// the server released the lock and another replica may be running a turn
// in that session): the turn stops rather than interleave with it.
var ErrTurnLockLost = errors.New("this session's turn lock was lost (the database ended its lock connection); the turn stops so that another replica's turn in it is not interleaved; send again to continue")

// checkTurnLock fails with ErrTurnLockLost, inside the write's
// transaction, when this process took sessionID's turn lock and the
// server no longer shows it held by that lock's connection (pg_locks: an
// advisory lock on one bigint key has classid = high and objid = low 32
// bits, objsubid 1). Sessions this process has not locked pass.
func (db *DB) checkTurnLock(ctx context.Context, tx pgx.Tx, sessionID string) error {
	db.heldMu.Lock()
	pid, locked := db.turnLocks[sessionID]
	db.heldMu.Unlock()
	if !locked {
		return nil
	}
	var held bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND objsubid = 1 AND pid = $3 AND ((classid::bigint << 32) | objid::bigint) = `+lockKey+`)`,
		db.lockNS, sessionID, int64(pid)).Scan(&held); err != nil {
		return err
	}
	if !held {
		return ErrTurnLockLost
	}
	return nil
}
