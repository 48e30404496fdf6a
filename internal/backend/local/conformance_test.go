package local

import (
	"io"
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

// TestConformancePIDNamespace runs the suite with the commands in a PID
// namespace of their own (as root, Options.PIDInit): background
// processes, Kill, timeouts and detached servers behave the same.
func TestConformancePIDNamespace(t *testing.T) {
	if !hasSysAdmin() {
		t.Skip("the commands' PID namespace needs CAP_SYS_ADMIN (run as root)")
	}
	work := t.TempDir()
	conformance.Run(t, conformance.Target{KeepsDetached: true, Open: func(t *testing.T) backend.Backend {
		b, err := NewWithOptions(Options{Cwd: work, Environ: func() []string { return hostEnv() }, PIDInit: testExecutable(t), Warn: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}})
}
