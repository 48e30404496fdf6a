package sandboxcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultSchema is the PostgreSQL schema of the fleet's catalog when none
// is given (the session store's default too: the tables do not clash).
const DefaultSchema = "hermes"

// pgMigrations is the PostgreSQL catalog's schema history: entry i brings
// it from version i to i+1 (in one transaction with the version bump,
// under an advisory lock, so nodes starting together migrate once).
// {schema} stands for the schema's name. Never edit a released entry.
// Times are bigint Unix nanoseconds, as in the SQLite catalog.
var pgMigrations = []string{`
CREATE TABLE {schema}.sandboxes (
	id             text PRIMARY KEY,
	task           text NOT NULL,
	node           text NOT NULL,
	tenant         text NOT NULL,
	template       text NOT NULL,
	state          text NOT NULL CHECK (state IN ('running', 'paused')),
	resume         boolean NOT NULL,
	remaining_ms   bigint NOT NULL,
	auto_pause     boolean NOT NULL,
	started_at     bigint NOT NULL,
	end_at         bigint NOT NULL,
	token          text NOT NULL,
	metadata       text NOT NULL,
	env            text NOT NULL,
	allow_internet boolean,
	network        text
);
CREATE INDEX sandboxes_node ON {schema}.sandboxes (node, started_at, id);
CREATE INDEX sandboxes_tenant ON {schema}.sandboxes (tenant, started_at);
CREATE TABLE {schema}.sandbox_nodes (
	name          text PRIMARY KEY,
	api_addr      text NOT NULL,
	envd_addr     text NOT NULL,
	cpu           integer NOT NULL,
	memory_mb     bigint NOT NULL,
	max_sandboxes integer NOT NULL,
	heartbeat_at  bigint NOT NULL
);
CREATE TABLE {schema}.sandbox_placements (
	id        text PRIMARY KEY,
	node      text NOT NULL,
	cpu       integer NOT NULL,
	memory_mb bigint NOT NULL,
	placed_at bigint NOT NULL
);
CREATE INDEX sandbox_placements_node ON {schema}.sandbox_placements (node);
`}

// pgMigrateLock is the advisory lock key of the catalog's migrations
// ("sbxcat").
const pgMigrateLock = 0x736278636174

var pgSchemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Postgres is the fleet's Catalog: one PostgreSQL database that every
// node of a fleet shares (hermes sandbox serve --catalog postgres://…).
// Besides the Catalog it keeps the nodes and their heartbeats and places
// sandboxes (fleet.go).
type Postgres struct {
	pool   *pgxpool.Pool
	schema string
	where  string // host/database, schema (never the password)

	mu     sync.Mutex
	closed bool
}

var _ Catalog = (*Postgres)(nil)

// OpenPostgres connects to the database url names (a PostgreSQL URL or
// key=value string) and brings the catalog's tables in schema ("" =
// DefaultSchema) up to date. Errors name the host and database, never the
// URL's password; a schema written by a newer hermes is refused.
func OpenPostgres(ctx context.Context, url, schema string) (*Postgres, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	if !pgSchemaName.MatchString(schema) {
		return nil, &ConfigError{fmt.Sprintf("sandbox catalog: schema %q: use lower-case letters, digits and _ (at most 63, not starting with a digit)", schema)}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &ConfigError{"sandbox catalog: --catalog is not a valid PostgreSQL URL: " + Redact(err.Error(), url)}
	}
	host := cfg.ConnConfig.Host
	if !strings.HasPrefix(host, "/") {
		host = net.JoinHostPort(host, fmt.Sprint(cfg.ConnConfig.Port))
	}
	c := &Postgres{schema: schema, where: fmt.Sprintf("postgres %s/%s, schema %s", host, cfg.ConnConfig.Database, schema)}
	cfg.ConnConfig.RuntimeParams["application_name"] = "hermes sandbox serve"
	if c.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("sandbox catalog %s: %s", c.where, Redact(err.Error(), url))
	}
	if err := c.migrate(ctx); err != nil {
		c.pool.Close()
		return nil, fmt.Errorf("sandbox catalog %s: %s (check the server runs and the --catalog URL)", c.where, Redact(err.Error(), url))
	}
	return c, nil
}

// ConfigError is an OpenPostgres error in its URL or schema: trying again
// cannot mend it (an unreachable server may come up).
type ConfigError struct{ msg string }

func (e *ConfigError) Error() string { return e.msg }

// Host is the host:port (or socket directory) url names, "" when it does
// not parse; never its password.
func Host(url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return ""
	}
	if strings.HasPrefix(cfg.Host, "/") {
		return cfg.Host
	}
	return net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
}

// Redact removes url's password from text (pgx errors may quote the
// connection string).
func Redact(text, url string) string {
	if cfg, err := pgconn.ParseConfig(url); err == nil && cfg.Password != "" {
		text = strings.ReplaceAll(text, cfg.Password, "xxxxx")
	}
	return text
}

// Describe names the server, database and schema (never the password).
func (c *Postgres) Describe() string { return c.where }

func (c *Postgres) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgMigrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, c.expand(`CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.sandbox_catalog_version (version integer NOT NULL);
INSERT INTO {schema}.sandbox_catalog_version SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM {schema}.sandbox_catalog_version);`)); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRow(ctx, c.expand("SELECT version FROM {schema}.sandbox_catalog_version")).Scan(&v); err != nil {
			return err
		}
		if v > len(pgMigrations) {
			return fmt.Errorf("written by a newer hermes (catalog schema %d, this build knows %d): upgrade hermes", v, len(pgMigrations))
		}
		for i := v; i < len(pgMigrations); i++ {
			if _, err := tx.Exec(ctx, c.expand(pgMigrations[i])); err != nil {
				return fmt.Errorf("migration to catalog schema %d: %w", i+1, err)
			}
		}
		_, err := tx.Exec(ctx, c.expand("UPDATE {schema}.sandbox_catalog_version SET version = $1"), len(pgMigrations))
		return err
	})
}

func (c *Postgres) expand(q string) string { return strings.ReplaceAll(q, "{schema}", c.schema) }

func (c *Postgres) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// Put inserts or replaces rec.
func (c *Postgres) Put(ctx context.Context, rec Record) error {
	if err := c.check(); err != nil {
		return err
	}
	meta, _ := json.Marshal(nonNil(rec.Metadata))
	env, _ := json.Marshal(nonNil(rec.Env))
	var network *string
	if rec.Network != nil {
		n, _ := json.Marshal(rec.Network)
		s := string(n)
		network = &s
	}
	_, err := c.pool.Exec(ctx, c.expand(`INSERT INTO {schema}.sandboxes (id, task, node, tenant, template, state, resume,
		remaining_ms, auto_pause, started_at, end_at, token, metadata, env, allow_internet, network)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
		ON CONFLICT (id) DO UPDATE SET task = EXCLUDED.task, node = EXCLUDED.node, tenant = EXCLUDED.tenant,
		template = EXCLUDED.template, state = EXCLUDED.state, resume = EXCLUDED.resume, remaining_ms = EXCLUDED.remaining_ms,
		auto_pause = EXCLUDED.auto_pause, started_at = EXCLUDED.started_at, end_at = EXCLUDED.end_at, token = EXCLUDED.token,
		metadata = EXCLUDED.metadata, env = EXCLUDED.env, allow_internet = EXCLUDED.allow_internet, network = EXCLUDED.network`),
		rec.ID, rec.Task, rec.Node, rec.Tenant, rec.Template, rec.State, rec.Resume, rec.Remaining.Milliseconds(),
		rec.AutoPause, rec.StartedAt.UnixNano(), rec.EndAt.UnixNano(), rec.Token, string(meta), string(env), rec.AllowInternet, network)
	if err != nil {
		return fmt.Errorf("sandbox catalog %s: save sandbox %s: %w", c.where, rec.ID, err)
	}
	return nil
}

// Delete removes the record of id.
func (c *Postgres) Delete(ctx context.Context, id string) error {
	if err := c.check(); err != nil {
		return err
	}
	if _, err := c.pool.Exec(ctx, c.expand(`DELETE FROM {schema}.sandboxes WHERE id = $1`), id); err != nil {
		return fmt.Errorf("sandbox catalog %s: delete sandbox %s: %w", c.where, id, err)
	}
	return nil
}

const pgColumns = `id, task, node, tenant, template, state, resume, remaining_ms, auto_pause,
	started_at, end_at, token, metadata, env, allow_internet, network`

// List returns node's records, oldest first.
func (c *Postgres) List(ctx context.Context, node string) ([]Record, error) {
	return c.query(ctx, `SELECT `+pgColumns+` FROM {schema}.sandboxes WHERE node = $1 ORDER BY started_at, id`, node)
}

// Get returns the record of id; ok is false when there is none.
func (c *Postgres) Get(ctx context.Context, id string) (rec Record, ok bool, err error) {
	recs, err := c.query(ctx, `SELECT `+pgColumns+` FROM {schema}.sandboxes WHERE id = $1`, id)
	if err != nil || len(recs) == 0 {
		return Record{}, false, err
	}
	return recs[0], true, nil
}

// ListTenant returns tenant's records on every node, oldest first.
func (c *Postgres) ListTenant(ctx context.Context, tenant string) ([]Record, error) {
	return c.query(ctx, `SELECT `+pgColumns+` FROM {schema}.sandboxes WHERE tenant = $1 ORDER BY started_at, id`, tenant)
}

func (c *Postgres) query(ctx context.Context, q string, args ...any) ([]Record, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, c.expand(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sandbox catalog %s: %w", c.where, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var remaining, started, end int64
		var meta, env string
		var network *string
		if err := rows.Scan(&r.ID, &r.Task, &r.Node, &r.Tenant, &r.Template, &r.State, &r.Resume, &remaining, &r.AutoPause,
			&started, &end, &r.Token, &meta, &env, &r.AllowInternet, &network); err != nil {
			return nil, fmt.Errorf("sandbox catalog %s: %w", c.where, err)
		}
		r.Remaining = time.Duration(remaining) * time.Millisecond
		r.StartedAt, r.EndAt = time.Unix(0, started), time.Unix(0, end)
		if err := errors.Join(json.Unmarshal([]byte(meta), &r.Metadata), json.Unmarshal([]byte(env), &r.Env)); err != nil {
			return nil, fmt.Errorf("sandbox catalog %s: sandbox %s: %w", c.where, r.ID, err)
		}
		if len(r.Metadata) == 0 {
			r.Metadata = nil
		}
		if network != nil {
			r.Network = &Network{}
			if err := json.Unmarshal([]byte(*network), r.Network); err != nil {
				return nil, fmt.Errorf("sandbox catalog %s: sandbox %s: network: %w", c.where, r.ID, err)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sandbox catalog %s: %w", c.where, err)
	}
	return out, nil
}

// Close closes the connections.
func (c *Postgres) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.pool.Close()
	return nil
}
