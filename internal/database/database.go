// Package database opens the session store the configuration chooses:
// `database.backend: sqlite` (the default: HERMES_HOME/state.db) or
// `postgres` (HERMES_DATABASE_URL, else database.url; database.schema),
// as Hermes Agent's config names them.
package database

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/outbox"
	"github.com/hermes-go/hermes/internal/pairing"
	"github.com/hermes-go/hermes/internal/responsestore"
	"github.com/hermes-go/hermes/internal/sessionkeys"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/postgres"
)

// Backend names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// BackendOf returns the configured backend (sqlite when unset) or an
// error naming the key and the accepted values.
func BackendOf(c config.DatabaseConfig) (string, error) {
	switch b := strings.ToLower(strings.TrimSpace(c.Backend)); b {
	case "", SQLite:
		return SQLite, nil
	case Postgres, "postgresql":
		return Postgres, nil
	default:
		return "", fmt.Errorf("database.backend %q is not one of sqlite, postgres; fix it in config.yaml", c.Backend)
	}
}

// PostgresConfig returns the PostgreSQL settings: the URL from
// HERMES_DATABASE_URL (getenv), else database.url, and where it came from.
func PostgresConfig(c config.DatabaseConfig, getenv func(string) string) postgres.Config {
	if u := strings.TrimSpace(getenv(postgres.URLEnv)); u != "" {
		return postgres.Config{URL: u, Schema: c.Schema, URLSource: postgres.URLEnv}
	}
	return postgres.Config{URL: c.URL, Schema: c.Schema, URLSource: "database.url"}
}

// Open opens the configured session store: home's state.db, or the
// PostgreSQL database (with its schema migrated). getenv reads the
// environment (os.Getenv).
func Open(ctx context.Context, c config.DatabaseConfig, home string, getenv func(string) string,
	opts ...store.Option) (store.Store, error) {
	backend, err := BackendOf(c)
	if err != nil {
		return nil, err
	}
	if backend == Postgres {
		return postgres.Open(ctx, PostgresConfig(c, getenv), opts...)
	}
	return store.Open(filepath.Join(home, store.FileName), opts...)
}

// Responses returns where the API server keeps Responses API objects: the
// database's table when st is the PostgreSQL store (every replica resolves
// every previous_response_id), else nil, which the API server takes as
// its own memory (one process: SQLite's state.db is per machine).
func Responses(st store.Store) responsestore.Store {
	if db, ok := st.(*postgres.DB); ok {
		return db.Responses()
	}
	return nil
}

// CronJobs returns the cron jobs of home: the database's tables when st is
// the PostgreSQL store (one schedule for every replica), else the files
// under home/cron. now is the clock of new jobs (nil = time.Now).
func CronJobs(st store.Store, home string, now func() time.Time) cron.Jobs {
	if db, ok := st.(*postgres.DB); ok {
		return db.Cron(home)
	}
	return cron.NewStore(home, now)
}

// OpenCron opens the cron jobs the configuration chooses without a
// session store at hand (the `hermes cron` commands): the files under
// home/cron, or the PostgreSQL tables; closeJobs frees the connection.
func OpenCron(ctx context.Context, c config.DatabaseConfig, home string, getenv func(string) string,
	now func() time.Time) (jobs cron.Jobs, closeJobs func() error, err error) {
	backend, err := BackendOf(c)
	if err != nil {
		return nil, nil, err
	}
	if backend != Postgres {
		return cron.NewStore(home, now), func() error { return nil }, nil
	}
	var opts []store.Option
	if now != nil {
		opts = append(opts, store.WithClock(now))
	}
	db, err := postgres.Open(ctx, PostgresConfig(c, getenv), opts...)
	if err != nil {
		return nil, nil, err
	}
	return db.Cron(home), db.Close, nil
}

// SessionKeys returns the index of conversation keys (a chat's key → its
// session): the database's table when st is the PostgreSQL store (a chat
// continues on any replica), else HERMES_HOME/sessions/sessions.json.
func SessionKeys(st store.Store, home string) sessionkeys.Index {
	if db, ok := st.(*postgres.DB); ok {
		return db.SessionKeys()
	}
	return sessionkeys.NewFile(home)
}

// Outbox returns where the gateway keeps replies a platform did not take:
// the database's delivery_obligations when st is the PostgreSQL store
// (whichever replica runs the platform retries them), else
// HERMES_HOME/gateway/undelivered-<platform>.json (home "" = memory only).
func Outbox(st store.Store, home string) outbox.Queue {
	if db, ok := st.(*postgres.DB); ok {
		return db.Outbox()
	}
	return outbox.NewFile(home)
}

// PairingDocs returns where the pairing state lives: the database's table
// when st is the PostgreSQL store (every replica shares it), else
// HERMES_HOME/pairing/.
func PairingDocs(st store.Store, home string) pairing.Docs {
	if db, ok := st.(*postgres.DB); ok {
		return db.Pairing()
	}
	return pairing.NewFiles(home)
}

// OpenPairing opens the pairing state the configuration chooses without a
// session store at hand (the `hermes pairing` commands); closeDocs frees
// the database connection.
func OpenPairing(ctx context.Context, c config.DatabaseConfig, home string, getenv func(string) string) (docs pairing.Docs, closeDocs func() error, err error) {
	backend, err := BackendOf(c)
	if err != nil {
		return nil, nil, err
	}
	if backend != Postgres {
		return pairing.NewFiles(home), func() error { return nil }, nil
	}
	db, err := postgres.Open(ctx, PostgresConfig(c, getenv))
	if err != nil {
		return nil, nil, err
	}
	return db.Pairing(), db.Close, nil
}
