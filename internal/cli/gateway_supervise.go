package cli

import "github.com/spf13/cobra"

// gatewayStatus is what `hermes gateway status` reports.
type gatewayStatus struct {
	Running bool
	PID     int
}

func (a *App) gatewayState() gatewayStatus { return gatewayStatus{} }

func (a *App) newGatewaySuperviseCmds() []*cobra.Command { return nil }
