package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/doctor"
)

// localGuardCheck reports which protections run under the local backend's
// commands: the Landlock ruleset of terminal.local_sandbox (see the README's
// "local guard" section) or, without it, the approvals alone.
func localGuardCheck(probe func() (int, error)) doctor.Check {
	return doctor.Check{Name: "local guard", Run: func(_ context.Context, e *doctor.Env) []doctor.Result {
		if e.Config == nil {
			return []doctor.Result{{Status: doctor.Skip, Name: "local guard", Detail: "skipped: the config did not load"}}
		}
		t := e.Config.Config.Terminal
		if t.Backend != "" && t.Backend != "local" {
			return []doctor.Result{{Status: doctor.Skip, Name: "local guard", Detail: "terminal.backend is " + t.Backend}}
		}
		if t.LocalSandbox == "off" {
			return []doctor.Result{{Status: doctor.Warn, Name: "local guard",
				Detail: "terminal.local_sandbox is off: approvals are the only guard for local commands",
				Fix:    "hermes config set terminal.local_sandbox workspace-write"}}
		}
		if p := e.LandlockABI; p != nil {
			probe = p
		}
		if abi, err := probe(); err != nil || abi <= 0 {
			return []doctor.Result{{Status: doctor.Warn, Name: "local guard",
				Detail: "terminal.local_sandbox is " + t.LocalSandbox + " but the kernel has no Landlock: ⚠ approvals only",
				Fix:    "boot a kernel ≥ 5.13 with landlock in lsm=, or use terminal.backend box"}}
		}
		return []doctor.Result{{Status: doctor.OK, Name: "local guard",
			Detail: "Landlock " + t.LocalSandbox + ", commands without CAP_SYS_PTRACE, hermes non-dumpable, command groups end with hermes"}}
	}}
}

// boxLeftoversCheck reports, and with --fix removes, what killed hermes
// processes left behind: empty box cgroups and spare files whose owner is
// gone. Loop devices and mounts are only reported (see box.CleanLeftovers).
func boxLeftoversCheck() doctor.Check {
	return doctor.Check{Name: "box leftovers", Run: func(_ context.Context, e *doctor.Env) []doctor.Result {
		if !e.Fix {
			return []doctor.Result{{Status: doctor.Skip, Name: "box leftovers", Detail: "run `hermes doctor --fix` (or `hermes box ls`) to sweep cgroups of killed hermes processes"}}
		}
		l := box.CleanLeftovers(e.Home)
		var out []doctor.Result
		if n := len(l.Removed) + len(l.Files); n > 0 {
			out = append(out, doctor.Result{Status: doctor.OK, Fixed: true, Name: "box leftovers",
				Detail: fmt.Sprintf("removed %d cgroup(s) and %d spare file(s) of killed hermes processes", len(l.Removed), len(l.Files))})
		}
		if len(l.Busy) > 0 {
			out = append(out, doctor.Result{Status: doctor.Warn, Name: "box cgroups",
				Detail: "cgroups of gone owners still hold processes: " + quoteList(l.Busy),
				Fix:    "kill the processes listed in their cgroup.procs, then run hermes doctor --fix again"})
		}
		if len(l.Loops)+len(l.Mounts) > 0 {
			out = append(out, doctor.Result{Status: doctor.Warn, Name: "box loop devices and mounts",
				Detail: "left by a killed hermes: " + quoteList(append(l.Loops, l.Mounts...)),
				Fix:    "umount the mount points first (their loop devices then detach), `losetup -d` the loop devices still attached, then `e2fsck -f` their images"})
		}
		if len(out) == 0 {
			out = append(out, doctor.Result{Status: doctor.OK, Name: "box leftovers", Detail: "none"})
		}
		return out
	}}
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
