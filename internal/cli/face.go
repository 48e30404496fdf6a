package cli

import "github.com/spf13/cobra"

// faceCommands are the commands of issue 11 that live outside the chat
// runtime: version, doctor, status and setup.
func (a *App) faceCommands() []*cobra.Command {
	return []*cobra.Command{a.newVersionCmd(), a.newDoctorCmd(), a.newStatusCmd(), a.newSetupCmd()}
}
