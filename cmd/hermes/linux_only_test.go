package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// linuxOnlyMessage is what a build for another system stops on
// (linux_only.go).
const linuxOnlyMessage = "hermes builds on Linux only"

// TestOtherSystemsStopOnLinuxOnly builds this command and
// hermes-box-init for macOS and Windows: each build fails at once, saying
// hermes builds on Linux only, not on the first Linux-only call
// (unix.Openat2) or a package whose files are all _linux.go.
func TestOtherSystemsStopOnLinuxOnly(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain on PATH to cross-build with")
	}
	for _, pkg := range []string{".", "../hermes-box-init"} {
		for _, goos := range []string{"darwin", "windows"} {
			checkLinuxOnly(t, gobin, pkg, goos)
		}
	}
}

// checkLinuxOnly builds pkg for goos and checks it stops on the
// Linux-only message alone.
func checkLinuxOnly(t *testing.T, gobin, pkg, goos string) {
	t.Helper()
	cmd := exec.Command(gobin, "build", "-o", filepath.Join(t.TempDir(), "out"), pkg)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Errorf("GOOS=%s go build %s succeeded", goos, pkg)
		return
	}
	if !strings.Contains(string(out), linuxOnlyMessage) {
		t.Errorf("GOOS=%s go build %s does not say %q:\n%s", goos, pkg, linuxOnlyMessage, out)
	}
	for _, noise := range []string{"Openat2", "build constraints exclude", "undefined:"} {
		if strings.Contains(string(out), noise) {
			t.Errorf("GOOS=%s go build fails on %q besides the Linux-only message:\n%s", goos, noise, out)
		}
	}
}
