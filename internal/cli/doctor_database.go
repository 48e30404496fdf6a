package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/doctor"
	"github.com/hermes-go/hermes/internal/store/postgres"
)

// databaseCheck reports on the PostgreSQL session store when
// database.backend is postgres: the connection, the server's version
// (13 or newer: pg_trgm is a trusted extension from 13) and the schema's
// version against this build's. With SQLite the state check covers it.
func databaseCheck() doctor.Check {
	return doctor.Check{Name: "database", Run: func(ctx context.Context, e *doctor.Env) []doctor.Result {
		if e.Config == nil {
			return nil
		}
		backend, err := database.BackendOf(e.Config.Config.Database)
		if err != nil {
			return []doctor.Result{{Status: doctor.Fail, Name: "database", Detail: err.Error(),
				Fix: "hermes config set database.backend sqlite (or postgres)"}}
		}
		if backend != database.Postgres {
			return nil
		}
		cfg := database.PostgresConfig(e.Config.Config.Database, e.Config.Getenv)
		st, err := postgres.Inspect(ctx, cfg)
		if err != nil {
			return []doctor.Result{{Status: doctor.Fail, Name: "database", Detail: err.Error(),
				Fix: "start the PostgreSQL server or correct " + postgres.URLEnv + " (or database.url)"}}
		}
		out := []doctor.Result{{Status: doctor.OK, Name: "database", Detail: "PostgreSQL " + st.ServerVersion + " at " + st.Where}}
		if st.ServerMajor < 13 {
			out[0].Status, out[0].Fix = doctor.Warn, "use PostgreSQL 13 or newer (hermes is tested on 15; Hermes Agent documents 17)"
		}
		want := postgres.SchemaVersion()
		switch {
		case !st.SchemaExists:
			out = append(out, doctor.Result{Status: doctor.OK, Name: "database schema",
				Detail: fmt.Sprintf("schema %s not created yet (the first run creates it)", st.Schema)})
		case st.SchemaVersion == 0:
			out = append(out, doctor.Result{Status: doctor.OK, Name: "database schema",
				Detail: fmt.Sprintf("schema %s exists (%s) without the session tables yet (the first run creates them)", st.Schema, tableList(st.Tables))})
		case st.SchemaVersion > want:
			out = append(out, doctor.Result{Status: doctor.Fail, Name: "database schema",
				Detail: fmt.Sprintf("version %d was written by a newer hermes (this one knows %d)", st.SchemaVersion, want),
				Fix:    "upgrade hermes on this machine (hermes update)"})
		case st.SchemaVersion < want:
			out = append(out, doctor.Result{Status: doctor.OK, Name: "database schema",
				Detail: fmt.Sprintf("version %d; the next run migrates it to %d", st.SchemaVersion, want)})
		default:
			out = append(out, doctor.Result{Status: doctor.OK, Name: "database schema",
				Detail: fmt.Sprintf("version %d (current), schema %s, %d tables", want, st.Schema, len(st.Tables))})
		}
		return out
	}}
}

// tableList names a schema's tables for doctor ("no tables" for none).
func tableList(tables []string) string {
	if len(tables) == 0 {
		return "no tables"
	}
	return "tables " + strings.Join(tables, ", ")
}
