package cli

import "github.com/spf13/cobra"

// TODO(owner of this subcommand): replace this placeholder.
func (a *App) newBoxCmd() *cobra.Command {
	return &cobra.Command{Use: "box", Short: "manage hermes boxes (sandboxes)"}
}
