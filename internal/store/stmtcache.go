package store

import (
	"context"
	"database/sql"
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
}

// query runs sqlText with args on db through a cached prepared statement.
func (c *stmtCache) query(ctx context.Context, db *sql.DB, sqlText string, args ...any) (*sql.Rows, error) {
	c.mu.Lock()
	st, ok := c.stmts[sqlText]
	if !ok && len(c.stmts) < maxCachedStmts {
		var err error
		if st, err = db.PrepareContext(ctx, sqlText); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		if c.stmts == nil {
			c.stmts = map[string]*sql.Stmt{}
		}
		c.stmts[sqlText] = st
		ok = true
	}
	c.mu.Unlock()
	if !ok {
		return db.QueryContext(ctx, sqlText, args...)
	}
	return st.QueryContext(ctx, args...)
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
