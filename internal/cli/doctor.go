package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/doctor"
)

// doctorOptions are the flags of `hermes doctor`.
type doctorOptions struct {
	fix, offline bool
	// cgroupRoot overrides /sys/fs/cgroup (hidden; for tests and unusual mounts).
	cgroupRoot string
}

// newDoctorCmd is `hermes doctor [--fix] [--offline]` (Hermes
// "cli-commands.md" `hermes doctor`): ✓/⚠/✗ per check with the fix; exit 1
// when anything is ✗.
func (a *App) newDoctorCmd() *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "check config, provider, state, permissions, skills and the box's kernel needs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := doctor.Run(cmd.Context(), a.doctorEnv(o), a.doctorChecks())
			rep.Write(a.Stdout)
			if rep.Failed() {
				return &ExitError{Code: 1, Silent: true}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.fix, "fix", false, "repair what is safe to repair (file modes, missing directories)")
	f.BoolVar(&o.offline, "offline", false, "skip network checks (the provider's /models)")
	f.StringVar(&o.cgroupRoot, "cgroup-root", "", "cgroup filesystem root to check (default /sys/fs/cgroup)")
	_ = f.MarkHidden("cgroup-root")
	return cmd
}

// doctorChecks is the list `hermes doctor` runs. Checks owned by other
// packages are appended here: the box's leftover-cgroup sweeper and the
// local backend guard's status plug in as further doctor.Check values.
func (a *App) doctorChecks() []doctor.Check {
	return append(doctor.Checks(), localGuardCheck(local.LandlockABI), a.hostedBackendCheck(), boxLeftoversCheck(), databaseCheck())
}

// doctorEnv loads what the checks look at; a config that fails to load is
// itself a finding, not an error of the command.
func (a *App) doctorEnv(o *doctorOptions) *doctor.Env {
	e := &doctor.Env{Home: a.Home(), Executable: a.Executable, Fix: o.fix, Offline: o.offline, CgroupRoot: o.cgroupRoot, Geteuid: os.Geteuid}
	l, err := config.Load(e.Home, config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		e.ConfigErr = err
		return e
	}
	e.Config = l
	e.Skills = a.skillsLibrary(l)
	return e
}
