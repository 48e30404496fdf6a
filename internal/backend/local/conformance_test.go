package local

import (
	"testing"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/conformance"
)

func TestConformance(t *testing.T) {
	work := t.TempDir()
	// KeepsDetached: see the Close doc comment in local.go.
	conformance.Run(t, conformance.Target{KeepsDetached: true, Open: func(t *testing.T) backend.Backend {
		b, err := New(work, nil, func() []string { return hostEnv() })
		if err != nil {
			t.Fatal(err)
		}
		return b
	}})
}
