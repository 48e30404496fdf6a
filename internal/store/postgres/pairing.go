package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/internal/pairing"
)

// Pairing is pairing.Docs in table pairing_state (schema version 4): the
// documents HERMES_HOME/pairing/ holds as files, one row each, shared by
// every replica. Update runs in one transaction holding a transaction
// advisory lock, so changes from every replica and the CLI serialise and
// are all-or-nothing.
type Pairing struct{ db *DB }

var _ pairing.Docs = Pairing{}

// Pairing returns the database's pairing documents.
func (db *DB) Pairing() Pairing { return Pairing{db: db} }

// pairingLockKey is the pairing state's advisory-lock key ($1 the
// schema's 32-bit namespace).
const pairingLockKey = `$1::integer, hashtext('pairing')`

// Get implements pairing.Reader.
func (p Pairing) Get(name string) ([]byte, error) {
	return getDoc(context.Background(), p.db.pool, p, name)
}

func getDoc(ctx context.Context, q queryRower, p Pairing, name string) ([]byte, error) {
	var body string
	err := q.QueryRow(ctx, `SELECT body FROM pairing_state WHERE name = $1`, name).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p.Where(name), err)
	}
	return []byte(body), nil
}

// Where implements pairing.Docs.
func (p Pairing) Where(name string) string {
	return fmt.Sprintf("%s.pairing_state row %q (%s)", p.db.schema, name, p.db.where)
}

// Names implements pairing.Docs.
func (p Pairing) Names() ([]string, error) {
	rows, err := p.db.pool.Query(context.Background(), `SELECT name FROM pairing_state ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("listing pairing state in %s: %w", p.db.where, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing pairing state in %s: %w", p.db.where, err)
	}
	return names, nil
}

// Update implements pairing.Docs.
func (p Pairing) Update(fn func(tx pairing.Tx) error) error {
	ctx := context.Background()
	return p.db.inTx(ctx, func(tx pgx.Tx) error {
		ns := int32(uint32(p.db.lockNS >> 32))
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock("+pairingLockKey+")", ns); err != nil {
			return fmt.Errorf("locking the pairing state in %s: %w", p.db.where, err)
		}
		return fn(pairingTx{p: p, tx: tx, ctx: ctx})
	})
}

type pairingTx struct {
	p   Pairing
	tx  pgx.Tx
	ctx context.Context
}

func (t pairingTx) Get(name string) ([]byte, error) { return getDoc(t.ctx, t.tx, t.p, name) }

func (t pairingTx) Put(name string, body []byte) error {
	_, err := t.tx.Exec(t.ctx, `INSERT INTO pairing_state (name, body) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET body = $2`, name, string(body))
	if err != nil {
		return fmt.Errorf("writing %s: %w", t.p.Where(name), err)
	}
	return nil
}
