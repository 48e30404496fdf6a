package store

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// maxCachedStmts bounds the prepared statements a Store keeps. Search
// builds its SQL from a handful of shapes (index, sort, filters, number of
// ids), so the bound is only reached by unusual mixes; past it statements
// are prepared per call as before.
const maxCachedStmts = 128

// stmtCache keeps prepared statements by SQL text so repeated searches
// skip SQLite's parse and plan. A *sql.Stmt is safe for concurrent use and
// re-prepares itself on each pooled connection it runs on.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	// later holds the texts first met inside a transaction, to prepare
	// once it has ended (prepareLater). Preparing them on the spot made
	// database/sql open a second connection (its pragmas and a second
	// parse of the schema: most of a short run's SQLite time) while the
	// transaction held the first, then prepare them again on the first.
	later []string
}

// stmt returns the cached prepared statement for sqlText, preparing it on
// first use; nil (and no error) once the cache is full.
func (c *stmtCache) stmt(ctx context.Context, db *sql.DB, sqlText string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.stmts[sqlText]
	if ok || len(c.stmts) >= maxCachedStmts {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[sqlText] = st
	return st, nil
}

// query runs sqlText with args on db through a cached prepared statement.
func (c *stmtCache) query(ctx context.Context, db *sql.DB, sqlText string, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, db, sqlText)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return db.QueryContext(ctx, sqlText, args...)
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for one row; an error preparing shows on Scan.
func (c *stmtCache) queryRow(ctx context.Context, db *sql.DB, sqlText string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, db, sqlText)
	if err != nil || st == nil {
		return db.QueryRowContext(ctx, sqlText, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// inTx returns sqlText's cached statement bound to tx, or nil when it is
// not cached yet or the cache is full (the caller then runs the text on
// tx). A text seen for the first time is queued for prepareLater, which
// caches it once the transaction has given its connection back.
// database/sql reuses the statement already prepared on tx's connection,
// so a write connection parses each statement once.
func (c *stmtCache) inTx(ctx context.Context, tx *sql.Tx, sqlText string) *sql.Stmt {
	c.mu.Lock()
	st, ok := c.stmts[sqlText]
	if !ok && len(c.stmts)+len(c.later) < maxCachedStmts && !slices.Contains(c.later, sqlText) {
		c.later = append(c.later, sqlText)
	}
	c.mu.Unlock()
	if !ok {
		return nil
	}
	return tx.StmtContext(ctx, st)
}

// prepareLater caches the statements inTx queued, on a free pooled
// connection (call it after a transaction has ended). A text that fails
// to prepare is dropped: its next use runs it uncached.
func (c *stmtCache) prepareLater(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	later := c.later
	c.later = nil
	c.mu.Unlock()
	for _, sqlText := range later {
		_, _ = c.stmt(ctx, db, sqlText)
	}
}

// close closes every cached statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
}
