package cli

import "github.com/spf13/cobra"

// TODO(owner of this subcommand): replace this placeholder.
func (a *App) newModelCmd() *cobra.Command {
	return &cobra.Command{Use: "model", Short: "choose the provider and model and save them to config"}
}
