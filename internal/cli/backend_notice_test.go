package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/backend"
)

// failingBackend is a backend whose environments never open.
type failingBackend struct{ err error }

func (f failingBackend) Kind() string { return "box" }
func (f failingBackend) Open(context.Context, string) (backend.Environment, error) {
	return nil, f.err
}
func (f failingBackend) Close() error { return nil }

// A box that cannot start was reported only to the model: a -z run printed
// the answer and exited 0. The person now gets one stderr line per run.
func TestBackendFailureToldOnce(t *testing.T) {
	var stderr bytes.Buffer
	b := &noticeBackend{Backend: failingBackend{errors.New("create cgroup /sys/fs/cgroup/x: permission denied")}, stderr: &stderr}
	for range 3 {
		if _, err := b.Open(context.Background(), "t1"); err == nil {
			t.Fatal("Open succeeded")
		}
	}
	out := stderr.String()
	if strings.Count(out, "hermes: warning:") != 1 || !strings.Contains(out, "box backend is not available") ||
		!strings.Contains(out, "permission denied") {
		t.Errorf("stderr = %q", out)
	}
	stderr.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b2 := &noticeBackend{Backend: failingBackend{context.Canceled}, stderr: &stderr}
	b2.Open(ctx, "t1")
	if stderr.Len() != 0 {
		t.Errorf("a cancelled open was reported: %q", stderr.String())
	}
}

// isolatedBackend declares the capability without being named "box".
type isolatedBackend struct{ failingBackend }

func (isolatedBackend) Kind() string   { return "some-sandbox" }
func (isolatedBackend) Isolated() bool { return true }

// Approvals decide "isolated" from the backend's capability, not its name,
// and the notice wrapper the CLI puts around every backend passes it on
// (an embedded interface would hide the method).
func TestIsolationIsACapabilityThroughTheWrapper(t *testing.T) {
	var stderr strings.Builder
	if !backend.Isolated(&noticeBackend{Backend: isolatedBackend{}, stderr: &stderr}) {
		t.Fatal("an isolated backend wrapped for notices reads as not isolated")
	}
	if backend.Isolated(&noticeBackend{Backend: failingBackend{}, stderr: &stderr}) {
		t.Fatal(`a backend named "box" without the capability reads as isolated`)
	}
}
