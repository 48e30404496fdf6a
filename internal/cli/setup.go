package cli

import (
	"github.com/spf13/cobra"
)

func (a *App) newSetupCmd() *cobra.Command { return &cobra.Command{Use: "setup", Hidden: true} }
