package cli

import "github.com/spf13/cobra"

// TODO(owner of this subcommand): replace this placeholder.
func (a *App) newSessionsCmd() *cobra.Command {
	return &cobra.Command{Use: "sessions", Short: "list, show, export, delete and rename sessions"}
}
