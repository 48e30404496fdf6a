package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/internal/responsestore"
)

// Responses is the API server's responsestore.Store in table
// api_responses (schema version 2): every replica on the database
// resolves every previous_response_id. Rows stay until deleted
// (DELETE /v1/responses/{id}); the body is the JSON served, byte for byte.
type Responses struct{ db *DB }

var _ responsestore.Store = Responses{}

// Responses returns the database's Responses API object store.
func (db *DB) Responses() Responses { return Responses{db: db} }

// Put implements responsestore.Store.
func (r Responses) Put(ctx context.Context, resp responsestore.Response) error {
	_, err := r.db.pool.Exec(ctx, `INSERT INTO api_responses (id, session_id, body, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET session_id = $2, body = $3`, resp.ID, resp.SessionID, string(resp.Body), millis(r.db.now()))
	if err != nil {
		return fmt.Errorf("storing response %s in %s: %w", resp.ID, r.db.where, err)
	}
	return nil
}

// Get implements responsestore.Store.
func (r Responses) Get(ctx context.Context, id string) (responsestore.Response, error) {
	out := responsestore.Response{ID: id}
	var body string
	err := r.db.pool.QueryRow(ctx, `SELECT session_id, body FROM api_responses WHERE id = $1`, id).Scan(&out.SessionID, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return responsestore.Response{}, responsestore.ErrNotFound
	}
	if err != nil {
		return responsestore.Response{}, fmt.Errorf("reading response %s from %s: %w", id, r.db.where, err)
	}
	out.Body = []byte(body)
	return out, nil
}

// Delete implements responsestore.Store.
func (r Responses) Delete(ctx context.Context, id string) (bool, error) {
	tag, err := r.db.pool.Exec(ctx, `DELETE FROM api_responses WHERE id = $1`, id)
	if err != nil {
		return false, fmt.Errorf("deleting response %s from %s: %w", id, r.db.where, err)
	}
	return tag.RowsAffected() > 0, nil
}
