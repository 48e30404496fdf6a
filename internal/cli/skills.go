package cli

import "github.com/spf13/cobra"

// TODO(owner of this subcommand): replace this placeholder.
func (a *App) newSkillsCmd() *cobra.Command {
	return &cobra.Command{Use: "skills", Short: "list, show, create, delete and check skills"}
}
