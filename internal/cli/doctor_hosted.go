package cli

import (
	"context"
	"time"

	"github.com/hermes-go/hermes/internal/backend/vercel"
	"github.com/hermes-go/hermes/internal/doctor"
)

// hostedBackendCheck reports whether the ssh, docker, vercel_sandbox or e2b
// backend named in terminal.backend can be built: its settings and
// credentials (environment or HERMES_HOME/.env) are what the backend
// needs. Nothing is created; the first command connects.
func (a *App) hostedBackendCheck() doctor.Check {
	const name = "terminal backend"
	return doctor.Check{Name: name, Run: func(_ context.Context, e *doctor.Env) []doctor.Result {
		if e.Config == nil {
			return []doctor.Result{{Status: doctor.Skip, Name: name, Detail: "skipped: the config did not load"}}
		}
		kind := e.Config.Config.Terminal.Backend
		switch kind {
		case "", "local", "box":
			return nil // the local guard and box checks cover these
		case vercel.Kind:
			now := time.Now()
			if a.Now != nil {
				now = a.Now()
			}
			return a.vercelChecks(e.Config, now)
		}
		b, err := a.newTerminalBackend(e.Config, e.Home)
		if err != nil {
			return []doctor.Result{{Status: doctor.Fail, Name: name, Detail: kind + ": " + err.Error(),
				Fix: "hermes setup terminal (or set the keys named above with hermes config set)"}}
		}
		_ = b.Close()
		return []doctor.Result{{Status: doctor.OK, Name: name, Detail: kind + ": settings and credentials present (reached on the first command)"}}
	}}
}
