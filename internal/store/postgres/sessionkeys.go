package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/internal/sessionkeys"
)

// SessionKeys is sessionkeys.Index in table session_keys (schema version
// 4): the gateway's conversation keys, shared by every replica, so a chat
// continues on whichever replica gets its next message.
type SessionKeys struct{ db *DB }

var _ sessionkeys.Index = SessionKeys{}

// SessionKeys returns the database's conversation-key index.
func (db *DB) SessionKeys() SessionKeys { return SessionKeys{db: db} }

// Get implements sessionkeys.Index.
func (k SessionKeys) Get(ctx context.Context, key string) (string, error) {
	var id string
	err := k.db.pool.QueryRow(ctx, `SELECT session_id FROM session_keys WHERE key = $1`, key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("session key %s in %s: %w", key, k.db.where, err)
	}
	return id, nil
}

// Set implements sessionkeys.Index.
func (k SessionKeys) Set(ctx context.Context, key, id string) error {
	_, err := k.db.pool.Exec(ctx, `INSERT INTO session_keys (key, session_id, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET session_id = $2, updated_at = $3`, key, id, millis(k.db.now()))
	if err != nil {
		return fmt.Errorf("saving session key %s in %s: %w", key, k.db.where, err)
	}
	return nil
}

// KeyOf implements sessionkeys.Index.
func (k SessionKeys) KeyOf(ctx context.Context, id string) (string, error) {
	var key *string
	if err := k.db.pool.QueryRow(ctx, `SELECT min(key) FROM session_keys WHERE session_id = $1`, id).Scan(&key); err != nil {
		return "", fmt.Errorf("the key of session %s in %s: %w", id, k.db.where, err)
	}
	if key == nil {
		return "", nil
	}
	return *key, nil
}
