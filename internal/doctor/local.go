package doctor

import (
	"context"
	"os"
)

// checkLocal says whether the local backend's guarded commands can see
// the user's other processes: as root they share a PID namespace whose
// /proc shows only them (local/pidns.go); otherwise a command can read
// /proc/<pid>/environ of, say, the shell that started hermes. Skip for
// another backend or terminal.local_sandbox: off.
func checkLocal(_ context.Context, e *Env) []Result {
	const name = "local process isolation"
	if e.Config == nil {
		return nil
	}
	t := e.Config.Config.Terminal
	if (t.Backend != "" && t.Backend != "local") || t.LocalSandbox == "off" {
		return []Result{{Status: Skip, Name: name, Detail: "terminal.backend is not local or terminal.local_sandbox is off"}}
	}
	euid := os.Geteuid
	if e.Geteuid != nil {
		euid = e.Geteuid
	}
	if euid() == 0 {
		return []Result{{Status: OK, Name: name, Detail: "running as root: guarded commands see only their own processes in /proc (a PID namespace of their own)"}}
	}
	return []Result{{Status: Warn, Name: name,
		Detail: "not root: guarded commands see the host's /proc and can read /proc/<pid>/environ of your other processes, such as the shell that started hermes",
		Fix:    "keep API keys out of that shell's environment (put them in " + e.Home + "/.env), run hermes as root, or use terminal.backend: box"}}
}
