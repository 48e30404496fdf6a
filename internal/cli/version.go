package cli

import "github.com/spf13/cobra"

// newVersionCmd is `hermes version`: the same output as `hermes --version`
// (Hermes "cli-commands.md" `hermes version`).
func (a *App) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version (same as --version)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			a.printVersion()
			return nil
		},
	}
}
