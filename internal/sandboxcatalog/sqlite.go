package sandboxcatalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the pure-Go "sqlite" driver, as internal/store uses
)

// FileName is the SQLite catalog's file inside HERMES_HOME.
const FileName = "sandboxes.db"

// schemaVersion is the PRAGMA user_version this build writes.
const schemaVersion = 1

const schema = `CREATE TABLE IF NOT EXISTS sandboxes (
	id TEXT PRIMARY KEY,
	task TEXT NOT NULL,
	node TEXT NOT NULL,
	tenant TEXT NOT NULL,
	template TEXT NOT NULL,
	state TEXT NOT NULL CHECK (state IN ('running', 'paused')),
	resume INTEGER NOT NULL,
	remaining_ms INTEGER NOT NULL,
	auto_pause INTEGER NOT NULL,
	started_at INTEGER NOT NULL, -- Unix nanoseconds
	end_at INTEGER NOT NULL,     -- Unix nanoseconds
	token TEXT NOT NULL,
	metadata TEXT NOT NULL,      -- JSON object
	env TEXT NOT NULL,           -- JSON object
	allow_internet INTEGER,      -- NULL: not given
	network TEXT                 -- JSON, NULL: not given
);
CREATE INDEX IF NOT EXISTS sandboxes_node ON sandboxes (node, started_at, id);`

// SQLite is the one-node Catalog: a SQLite database (WAL, every Put its
// own committed transaction; synchronous=NORMAL, so a commit survives any
// crash of the process, as internal/store's does).
type SQLite struct {
	db   *sql.DB
	path string

	mu     sync.Mutex
	closed bool
}

var _ Catalog = (*SQLite)(nil)

// OpenSQLite opens (creating if needed) the catalog at path, usually
// filepath.Join(HERMES_HOME, FileName). The file is private to the user
// (0600: it holds the sandboxes' envd tokens and envVars). Errors name the
// file.
func OpenSQLite(path string) (*SQLite, error) {
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("sandbox catalog %s: the path must not contain '?'; set HERMES_HOME to another directory", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sandbox catalog: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox catalog: %w", err)
	}
	f.Close()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sandbox catalog %s: %w", path, err)
	}
	c := &SQLite{db: db, path: path}
	if err := c.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sandbox catalog %s: %w", path, err)
	}
	return c, nil
}

func (c *SQLite) migrate() error {
	var v int
	if err := c.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("written by a newer hermes (schema %d, this build knows %d): upgrade hermes, or move the file aside", v, schemaVersion)
	}
	if _, err := c.db.Exec(schema); err != nil {
		return err
	}
	_, err := c.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
	return err
}

func (c *SQLite) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// Put inserts or replaces rec.
func (c *SQLite) Put(ctx context.Context, rec Record) error {
	if err := c.check(); err != nil {
		return err
	}
	meta, _ := json.Marshal(nonNil(rec.Metadata))
	env, _ := json.Marshal(nonNil(rec.Env))
	var allow any
	if rec.AllowInternet != nil {
		allow = boolInt(*rec.AllowInternet)
	}
	var network any
	if rec.Network != nil {
		n, _ := json.Marshal(rec.Network)
		network = string(n)
	}
	_, err := c.db.ExecContext(ctx, `INSERT OR REPLACE INTO sandboxes (id, task, node, tenant, template, state, resume,
		remaining_ms, auto_pause, started_at, end_at, token, metadata, env, allow_internet, network)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		rec.ID, rec.Task, rec.Node, rec.Tenant, rec.Template, rec.State, boolInt(rec.Resume), rec.Remaining.Milliseconds(),
		boolInt(rec.AutoPause), rec.StartedAt.UnixNano(), rec.EndAt.UnixNano(), rec.Token, string(meta), string(env), allow, network)
	if err != nil {
		return fmt.Errorf("sandbox catalog %s: save sandbox %s: %w", c.path, rec.ID, err)
	}
	return nil
}

// Delete removes the record of id.
func (c *SQLite) Delete(ctx context.Context, id string) error {
	if err := c.check(); err != nil {
		return err
	}
	if _, err := c.db.ExecContext(ctx, `DELETE FROM sandboxes WHERE id = ?`, id); err != nil {
		return fmt.Errorf("sandbox catalog %s: delete sandbox %s: %w", c.path, id, err)
	}
	return nil
}

// List returns node's records, oldest first.
func (c *SQLite) List(ctx context.Context, node string) ([]Record, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.db.QueryContext(ctx, `SELECT id, task, node, tenant, template, state, resume, remaining_ms, auto_pause,
		started_at, end_at, token, metadata, env, allow_internet, network FROM sandboxes WHERE node = ? ORDER BY started_at, id`, node)
	if err != nil {
		return nil, fmt.Errorf("sandbox catalog %s: %w", c.path, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var resume, autoPause int
		var remaining, started, end int64
		var meta, env string
		var allow sql.NullInt64
		var network sql.NullString
		if err := rows.Scan(&r.ID, &r.Task, &r.Node, &r.Tenant, &r.Template, &r.State, &resume, &remaining, &autoPause,
			&started, &end, &r.Token, &meta, &env, &allow, &network); err != nil {
			return nil, fmt.Errorf("sandbox catalog %s: %w", c.path, err)
		}
		r.Resume, r.AutoPause = resume != 0, autoPause != 0
		r.Remaining = time.Duration(remaining) * time.Millisecond
		r.StartedAt, r.EndAt = time.Unix(0, started), time.Unix(0, end)
		if err := json.Unmarshal([]byte(meta), &r.Metadata); err != nil {
			return nil, fmt.Errorf("sandbox catalog %s: sandbox %s: metadata: %w", c.path, r.ID, err)
		}
		if err := json.Unmarshal([]byte(env), &r.Env); err != nil {
			return nil, fmt.Errorf("sandbox catalog %s: sandbox %s: env: %w", c.path, r.ID, err)
		}
		if len(r.Metadata) == 0 {
			r.Metadata = nil
		}
		if allow.Valid {
			b := allow.Int64 != 0
			r.AllowInternet = &b
		}
		if network.Valid {
			r.Network = &Network{}
			if err := json.Unmarshal([]byte(network.String), r.Network); err != nil {
				return nil, fmt.Errorf("sandbox catalog %s: sandbox %s: network: %w", c.path, r.ID, err)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sandbox catalog %s: %w", c.path, err)
	}
	return out, nil
}

// Close closes the database.
func (c *SQLite) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	return c.db.Close()
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
