package cli

import (
	"fmt"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/config"
)

// newBoxBackend builds the box backend (terminal.backend: box).
func (a *App) newBoxBackend(c *config.Config, cwd string) (backend.Backend, error) {
	return nil, fmt.Errorf("terminal.backend box is not available in this build")
}
