package cli

import "github.com/spf13/cobra"

// TODO(owner of this subcommand): replace this placeholder.
func (a *App) newConfigCmd() *cobra.Command {
	return &cobra.Command{Use: "config", Short: "show and edit config.yaml and .env"}
}
