package box

import (
	"testing"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/conformance"
)

// The box passes the backend conformance suite, non-persistent boxes on a
// bind-mounted workspace (the default for the agent).
func TestConformance(t *testing.T) {
	needBoxes(t)
	home, ws := t.TempDir(), t.TempDir()
	conformance.Run(t, conformance.Target{Open: func(t *testing.T) backend.Backend {
		m, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(ws), Home: home})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}})
}
