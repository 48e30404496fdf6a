package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Status is what Inspect finds.
type Status struct {
	Where         string   // host/database, schema (no password)
	ServerVersion string   // SHOW server_version
	ServerMajor   int      // server_version_num / 10000
	SchemaVersion int      // 0 when the session tables do not exist yet
	Schema        string   // the schema's name
	SchemaExists  bool     // the schema exists (maybe with other tables only, such as a sandbox fleet's)
	Tables        []string // the schema's tables, by name
}

// Inspect connects to the database cfg names without changing anything
// (no migration), for `hermes doctor`: the server's version and the
// schema's. Errors are Open's (host and URL source named, no password).
func Inspect(ctx context.Context, cfg Config) (Status, error) {
	src := cfg.URLSource
	if src == "" {
		src = URLEnv
	}
	schema := cfg.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaName.MatchString(schema) {
		return Status{}, fmt.Errorf("database.schema %q: use lower-case letters, digits and _", schema)
	}
	ccfg, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		return Status{}, fmt.Errorf("%s is not a valid PostgreSQL URL: %s", src, redact(err.Error(), cfg.URL))
	}
	host := hostOf(ccfg)
	st := Status{Where: fmt.Sprintf("postgres %s/%s, schema %s", host, ccfg.Database, schema)}
	conn, err := pgx.ConnectConfig(ctx, ccfg)
	if err != nil {
		return st, connectError(err, host, src, cfg.URL)
	}
	defer conn.Close(ctx)
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('server_version_num')::int").
		Scan(&st.ServerVersion, &num); err != nil {
		return st, err
	}
	st.ServerMajor = num / 10000
	st.Schema = schema
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&st.SchemaExists); err != nil {
		return st, err
	}
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", schema)
	if err != nil {
		return st, err
	}
	if st.Tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return st, err
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", schema+".schema_version").Scan(&exists); err != nil {
		return st, err
	}
	if exists {
		err = conn.QueryRow(ctx, "SELECT version FROM "+schema+".schema_version").Scan(&st.SchemaVersion)
	}
	return st, err
}
