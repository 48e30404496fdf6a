package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/doctor"
)

// doctor says which guard the local backend's commands run under: ⚠ when
// the guard is off or the kernel has no Landlock (approvals only), ✓ with
// the mode otherwise, and nothing for another backend.
func TestDoctorLocalGuardCheck(t *testing.T) {
	abi := func(v int, err error) func() (int, error) { return func() (int, error) { return v, err } }
	cases := []struct {
		backend, mode string
		probe         func() (int, error)
		want          doctor.Status
		detail        string
	}{
		{"local", "workspace-write", abi(7, nil), doctor.OK, "Landlock workspace-write"},
		{"", "read-only", abi(4, nil), doctor.OK, "Landlock read-only"},
		{"local", "off", abi(7, nil), doctor.Warn, "approvals are the only guard"},
		{"local", "workspace-write", abi(0, errors.New("ENOSYS")), doctor.Warn, "no Landlock"},
		{"box", "workspace-write", abi(7, nil), doctor.Skip, "terminal.backend is box"},
	}
	for _, c := range cases {
		e := &doctor.Env{Config: &config.Loaded{}, LandlockABI: c.probe}
		e.Config.Config.Terminal.Backend = c.backend
		e.Config.Config.Terminal.LocalSandbox = c.mode
		got := localGuardCheck(nil).Run(context.Background(), e)
		if len(got) != 1 || got[0].Status != c.want || !strings.Contains(got[0].Detail, c.detail) {
			t.Errorf("%s/%s: got %+v, want status %v with %q", c.backend, c.mode, got, c.want, c.detail)
		}
	}
}
