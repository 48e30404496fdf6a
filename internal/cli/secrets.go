package cli

import "github.com/spf13/cobra"

// TODO(owner of this subcommand): replace this placeholder.
func (a *App) newSecretsCmd() *cobra.Command {
	return &cobra.Command{Use: "secrets", Short: "manage secrets that the box sees only as placeholders"}
}
