package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/store/postgres"
)

func (a *App) newSessionsMigrateCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "migrate --to postgres|sqlite",
		Short: "copy the sessions of state.db into PostgreSQL, or back (resumable; counts checked)",
		Long: `Copies every session of HERMES_HOME/state.db into the PostgreSQL database
(HERMES_DATABASE_URL, else database.url; database.schema) with --to postgres,
or the other way with --to sqlite. Sessions the target already has are
skipped, so an interrupted run resumes and a second run copies nothing; at
the end every session's message count is checked in the target. Then set
database.backend to the target.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.sessionsMigrate(cmd.Context(), to)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "postgres or sqlite: where the sessions go")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func (a *App) sessionsMigrate(ctx context.Context, to string) error {
	l, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return err
	}
	target, err := database.BackendOf(config.DatabaseConfig{Backend: to})
	if err != nil || to == "" {
		return fmt.Errorf("--to %q: use --to postgres or --to sqlite", to)
	}
	lite, err := store.Open(filepath.Join(a.Home(), store.FileName), store.WithClock(a.Now))
	if err != nil {
		return err
	}
	defer lite.Close()
	pg, err := postgres.Open(ctx, database.PostgresConfig(l.Config.Database, l.Getenv), store.WithClock(a.Now))
	if err != nil {
		return err
	}
	defer pg.Close()
	var src, dst store.Store = lite, pg
	if target == database.SQLite {
		src, dst = pg, lite
	}
	fmt.Fprintf(a.Stderr, "Copying sessions from %s to %s\n", src.Describe(), dst.Describe())
	rep, err := database.Copy(ctx, src, dst, func(r database.CopyReport) {
		fmt.Fprintf(a.Stderr, "  %d of %d sessions copied\n", r.Copied+r.Skipped, r.Sessions)
	})
	if err != nil {
		return fmt.Errorf("%w\nnothing copied so far is lost: run the same command again to resume", err)
	}
	fmt.Fprintf(a.Stdout, "Copied %d sessions (%d were already there); checked %d sessions, %d messages in %s.\n",
		rep.Copied, rep.Skipped, rep.Sessions, rep.Messages, dst.Describe())
	if b, _ := database.BackendOf(l.Config.Database); b != target {
		fmt.Fprintf(a.Stdout, "Sessions are read from %s until you run: hermes config set database.backend %s\n", src.Describe(), target)
	}
	return nil
}
