package cli

import "github.com/spf13/cobra"

// TODO(owner of this subcommand): replace this placeholder.
func (a *App) newEgressCmd() *cobra.Command {
	return &cobra.Command{Use: "egress", Short: "manage the box egress allowlist"}
}
