package cli

import (
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/config"
)

// newBoxBackend builds the box backend (terminal.backend: box): one box per
// session, egress through the host proxy with the configured allowlist. The
// agent's manager prestarts a box init so that the box boots while the
// model thinks about its first answer.
func (a *App) newBoxBackend(c *config.Config, cwd string) (backend.Backend, error) {
	return a.newBoxManager(c.Terminal, cwd, true)
}
