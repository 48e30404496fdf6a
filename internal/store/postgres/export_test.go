package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// Pool and LockNamespace let the tests look under the store.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

func (db *DB) LockNamespace() int64 { return db.lockNS }
