package registry

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
)

// load writes yaml as HERMES_HOME/config.yaml and loads it.
func load(t *testing.T, yaml string) (*config.Loaded, Deps) {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "HOME" {
			return filepath.Dir(home)
		}
		return ""
	}
	cfg, err := config.Load(home, config.LoadOptions{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	return cfg, Deps{Home: home, Getenv: getenv, Environ: func() []string { return nil }, Stderr: &stderr}
}

// Every terminal.backend value config accepts has a constructor: a value
// `hermes config set` takes never fails later as "not supported".
func TestEveryConfiguredKindHasAConstructor(t *testing.T) {
	if got, want := Kinds(), config.TerminalBackends(); !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %v, config.TerminalBackends() = %v", got, want)
	}
}

// An unknown backend name (hand-edited config.yaml) is an error naming
// the key, the accepted values and the fix.
func TestUnknownBackendNamesKeyAndFix(t *testing.T) {
	cfg, d := load(t, "terminal:\n  backend: modal\n")
	_, err := New(d, cfg, t.TempDir())
	if err == nil {
		t.Fatal("terminal.backend: modal built a backend")
	}
	for _, want := range []string{"terminal.backend", `"modal"`, "local, box", "hermes config set terminal.backend"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// The local backend refuses a writable path inside HERMES_HOME (written
// with ~ as people write it), before anything runs.
func TestLocalRefusesWritablePathInHome(t *testing.T) {
	cfg, d := load(t, "terminal:\n  backend: local\n")
	cfg.Config.Terminal.WritablePaths = []string{"~/" + filepath.Base(d.Home) + "/skills"}
	_, err := New(d, cfg, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "inside HERMES_HOME") {
		t.Fatalf("writable path inside HERMES_HOME: err = %v", err)
	}
	cfg.Config.Terminal.WritablePaths = nil
	cfg.Config.Terminal.LocalSandbox = "sometimes"
	if _, err := New(d, cfg, t.TempDir()); err == nil || !strings.Contains(err.Error(), "terminal.local_sandbox") {
		t.Fatalf("unknown local_sandbox: err = %v", err)
	}
}

// The ssh backend builds from terminal.ssh_* without reaching the host
// (it connects on the first command).
func TestSSHBuildsFromTerminalKeys(t *testing.T) {
	cfg, d := load(t, "terminal:\n  backend: ssh\n  ssh_host: example.invalid\n  ssh_user: me\n")
	b, err := New(d, cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Kind() != "ssh" {
		t.Fatalf("Kind() = %q", b.Kind())
	}
}
