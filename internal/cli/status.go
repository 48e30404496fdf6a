package cli

import (
	"github.com/spf13/cobra"
)

func (a *App) newStatusCmd() *cobra.Command { return &cobra.Command{Use: "status", Hidden: true} }
