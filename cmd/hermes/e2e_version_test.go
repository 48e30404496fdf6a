package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `hermes version` prints what `hermes --version` prints, and the binary
// linked as hermes-agent (what `make install` creates) runs the same
// commands.
func TestVersionCommandAndHermesAgentName(t *testing.T) {
	e := newE2E(t)
	flag := e.mustRun("--version").stdout
	if got := e.mustRun("version").stdout; got != flag {
		t.Fatalf("hermes version = %q, want --version's %q", got, flag)
	}
	agent := filepath.Join(t.TempDir(), "hermes-agent")
	if err := os.Symlink(hermesBin, agent); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(agent, args...)
		cmd.Env = append(e.baseEnv(), e.env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hermes-agent %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	// The install directory line is the resolved binary, so all of it matches.
	if got := run("version"); got != flag {
		t.Errorf("hermes-agent version = %q, want %q", got, flag)
	}
	if got := run("config", "path"); strings.TrimSpace(got) != filepath.Join(e.home, "config.yaml") {
		t.Errorf("hermes-agent config path = %q", got)
	}
}
