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

	"github.com/hermes-go/hermes/internal/config"
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
