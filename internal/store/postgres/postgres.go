// Package postgres is the PostgreSQL implementation of store.Store
// (`database.backend: postgres`), for several hermes processes on several
// machines sharing one history: sessions, messages, usage, titles, search
// and the per-session turn lock live in one database, with what the
// gateway's replicas share: Responses API objects (responses.go), cron
// jobs, run locks and ledger (cron.go, cron_claim.go), conversation keys
// (sessionkeys.go) and pairing state (pairing.go).
//
// Connections go through pgxpool (github.com/jackc/pgx/v5). Every table
// lives in one schema (`database.schema`, "hermes" by default), brought up
// to date by versioned migrations (schema.go) under an advisory lock, so
// replicas starting together migrate once. Search uses PostgreSQL full
// text (a generated tsvector with a GIN index, ts_rank_cd) and pg_trgm
// (substrings, CJK); see search.go for where it differs from SQLite's FTS5.
// The turn lock is a session-level advisory lock held on a connection of
// its own: PostgreSQL releases it when that connection ends, so a replica
// killed mid-turn hands the session to the next one (lock.go).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-go/hermes/internal/store"
)

// DefaultSchema is the schema hermes uses when database.schema is unset.
const DefaultSchema = "hermes"

// URLEnv is the environment variable that holds the database URL (Hermes
// Agent's name for it).
const URLEnv = "HERMES_DATABASE_URL"

// Config selects a database.
type Config struct {
	// URL is a PostgreSQL connection URL or key=value string
	// (postgres://user:password@host:5432/db?sslmode=require).
	URL string
	// Schema holds hermes's tables ("" = DefaultSchema); created if missing.
	Schema string
	// URLSource names where URL came from for error messages
	// (HERMES_DATABASE_URL, database.url); "" = URLEnv.
	URLSource string
}

// DB is an open PostgreSQL store. It is safe for concurrent use.
type DB struct {
	pool *pgxpool.Pool
	// locks holds the connections that carry turn locks (one per locked
	// session), apart from pool so that many long turns cannot starve
	// the writes.
	locks  *pgxpool.Pool
	schema string
	where  string // host/database, schema: for Describe
	now    func() time.Time
	rand   io.Reader
	lockNS int64 // advisory-lock namespace of this schema
	// held are the connections carrying turn locks now; Close closes
	// them (pgxpool's Close waits for every acquired connection).
	heldMu sync.Mutex
	held   map[*pgxpool.Conn]bool
	// turnLocks maps a session whose turn lock this process holds to the
	// server pid of the connection holding it: a write to that session
	// checks the lock is still there (checkTurnLock), so a turn whose lock
	// connection was cut cannot write beside the replica that took over.
	turnLocks map[string]uint32
	// retryFor bounds the retries of a write whose connection was lost
	// (writeRetryFor; tests shorten it).
	retryFor time.Duration
}

var _ store.Store = (*DB)(nil)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// OpenError is an error of Open (the message says what failed).
type OpenError struct{ Msg string }

func (e *OpenError) Error() string { return e.Msg }

// Open connects to the database cfg names and brings its schema up to
// date. An unreachable server is an error naming the host and where the
// URL came from (never the password); a schema written by a newer hermes
// is refused.
func Open(ctx context.Context, cfg Config, opts ...store.Option) (*DB, error) {
	db, err := open(ctx, cfg, opts...)
	if err != nil {
		return nil, &OpenError{Msg: err.Error()}
	}
	return db, nil
}

func open(ctx context.Context, cfg Config, opts ...store.Option) (*DB, error) {
	set := store.NewSettings(opts...)
	src := cfg.URLSource
	if src == "" {
		src = URLEnv
	}
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, fmt.Errorf("database.backend is postgres but no database URL is set: set %s (or database.url)", URLEnv)
	}
	schema := cfg.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("database.schema %q: use lower-case letters, digits and _ (at most 63, not starting with a digit)", schema)
	}
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%s is not a valid PostgreSQL URL: %s", src, redact(err.Error(), cfg.URL))
	}
	host := hostOf(pcfg.ConnConfig)
	where := fmt.Sprintf("postgres %s/%s, schema %s", host, pcfg.ConnConfig.Database, schema)
	pcfg.ConnConfig.RuntimeParams["search_path"] = schema + ", public"
	pcfg.ConnConfig.RuntimeParams["application_name"] = "hermes"
	lcfg := pcfg.Copy()
	lcfg.MaxConns = 256
	lcfg.MinConns = 0
	db := &DB{schema: schema, where: where, now: set.Now, rand: set.Rand, lockNS: lockNamespace(schema),
		held: map[*pgxpool.Conn]bool{}, retryFor: writeRetryFor}
	if db.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, connectError(err, host, src, cfg.URL)
	}
	if db.locks, err = pgxpool.NewWithConfig(ctx, lcfg); err != nil {
		db.pool.Close()
		return nil, connectError(err, host, src, cfg.URL)
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) || errors.Is(err, errNewerSchema) {
			return nil, fmt.Errorf("session store %s: %s", where, redact(err.Error(), cfg.URL))
		}
		return nil, connectError(err, host, src, cfg.URL)
	}
	return db, nil
}

// connectError says which server could not be reached and which setting
// named it; the URL's password never appears.
func connectError(err error, host, src, url string) error {
	return fmt.Errorf("cannot reach the PostgreSQL server at %s (from %s): %s; check the server is running and the URL in %s",
		host, src, redact(err.Error(), url), src)
}

// redact removes a URL's password from text (pgx errors may quote the
// connection string).
func redact(text, url string) string {
	if cfg, err := pgconn.ParseConfig(url); err == nil && cfg.Password != "" {
		text = strings.ReplaceAll(text, cfg.Password, "xxxxx")
	}
	return text
}

func hostOf(c *pgx.ConnConfig) string {
	if strings.HasPrefix(c.Host, "/") {
		return c.Host + " (unix socket)"
	}
	return net.JoinHostPort(c.Host, fmt.Sprint(c.Port))
}

// Describe names the server, database and schema (never the password).
func (db *DB) Describe() string { return db.where }

// Schema is the schema holding hermes's tables.
func (db *DB) Schema() string { return db.schema }

// Close closes every connection; turn locks still held are released.
func (db *DB) Close() error {
	db.heldMu.Lock()
	for conn := range db.held {
		_ = conn.Conn().Close(context.Background())
		conn.Release()
	}
	clear(db.held)
	db.heldMu.Unlock()
	db.locks.Close()
	db.pool.Close()
	return nil
}

// ServerVersion returns the server's version string (SHOW server_version).
func (db *DB) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := db.pool.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v, err
}

// NewSessionID returns a fresh session id (20261130_145500_a1b2c3).
func (db *DB) NewSessionID() (string, error) { return store.SessionIDAt(db.now(), db.rand) }

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// isUnique reports whether err is a unique violation of constraint/index name.
func isUnique(err error, name string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (name == "" || pe.ConstraintName == name)
}

// isForeignKey reports whether err is a foreign key violation.
func isForeignKey(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

// Pool is the connection pool (benchmarks run ANALYZE through it).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }
