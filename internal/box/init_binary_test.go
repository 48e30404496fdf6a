package box

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// testInitEnv names a box init program for startTestBox (unset: the test
// binary itself, re-executed with wire.InitArg as hermes does without
// hermes-box-init). TestEscapeBatteryWithInitBinary sets it.
const testInitEnv = "HERMES_BOX_TEST_INIT"

func TestFindInitBinary(t *testing.T) {
	dir := t.TempDir()
	hermes := filepath.Join(dir, "hermes")
	must(t, os.WriteFile(hermes, []byte("#!/bin/true\n"), 0o755))
	initPath := filepath.Join(dir, InitBinaryName)

	if _, err := FindInitBinary(hermes); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("no init beside hermes: err = %v, want missing", err)
	}
	must(t, os.WriteFile(initPath, []byte("#!/bin/true\n"), 0o644))
	if _, err := FindInitBinary(hermes); err == nil || !strings.Contains(err.Error(), "not executable") {
		t.Fatalf("mode 644: err = %v, want not executable", err)
	}
	must(t, os.Chmod(initPath, 0o775))
	if _, err := FindInitBinary(hermes); err == nil || !strings.Contains(err.Error(), "writable by group") {
		t.Fatalf("mode 775: err = %v, want writable by group", err)
	}
	must(t, os.Chmod(initPath, 0o755))
	got, err := FindInitBinary(hermes)
	if err != nil || got != initPath {
		t.Fatalf("FindInitBinary = %q, %v; want %q", got, err, initPath)
	}
	// hermes reached through a link (make install's hermes-agent): the
	// init is looked up beside the real binary.
	linkDir := t.TempDir()
	link := filepath.Join(linkDir, "hermes-agent")
	must(t, os.Symlink(hermes, link))
	if got, err := FindInitBinary(link); err != nil || got != initPath {
		t.Fatalf("through a link: FindInitBinary = %q, %v; want %q", got, err, initPath)
	}
	// A link in the init's place is refused: it could point anywhere.
	must(t, os.Remove(initPath))
	must(t, os.Symlink("/bin/true", initPath))
	if _, err := FindInitBinary(hermes); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("init is a symlink: err = %v, want not a regular file", err)
	}
}

func TestResolveInitFallsBackToHermes(t *testing.T) {
	dir := t.TempDir()
	hermes := filepath.Join(dir, "hermes")
	must(t, os.WriteFile(hermes, []byte("#!/bin/true\n"), 0o755))
	opts := Options{Executable: hermes}
	resolveInit(&opts)
	if opts.InitBinary != hermes || len(opts.InitArgs) != 1 || opts.InitArgs[0] != wire.InitArg {
		t.Fatalf("without hermes-box-init: InitBinary %q args %q; want %q [%s]", opts.InitBinary, opts.InitArgs, hermes, wire.InitArg)
	}
	must(t, os.WriteFile(filepath.Join(dir, InitBinaryName), []byte("#!/bin/true\n"), 0o755))
	opts = Options{Executable: hermes}
	resolveInit(&opts)
	if want := filepath.Join(dir, InitBinaryName); opts.InitBinary != want {
		t.Fatalf("with hermes-box-init: InitBinary %q, want %q", opts.InitBinary, want)
	}
}

// TestEscapeBatteryWithInitBinary runs the escape battery and the init's
// own tests again with cmd/hermes-box-init as every box's PID 1 (the
// rest of the package's tests use the test binary re-executed with
// wire.InitArg, as hermes does without hermes-box-init): no path of the box's
// security may differ between the two.
func TestEscapeBatteryWithInitBinary(t *testing.T) {
	needBoxes(t)
	if os.Getenv(testInitEnv) != "" {
		t.Skip("already running with " + testInitEnv)
	}
	if testing.Short() {
		t.Skip("-short: the escape battery runs once, with the test binary as init")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain on PATH to build cmd/hermes-box-init")
	}
	initBin := filepath.Join(t.TempDir(), InitBinaryName)
	build := exec.Command(gobin, "build", "-o", initBin, "../../cmd/hermes-box-init")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build hermes-box-init: %v\n%s", err, out)
	}
	self, err := os.Executable()
	must(t, err)
	cmd := exec.CommandContext(context.Background(), self, "-test.v", "-test.count=1", "-test.run",
		"^(TestEscape|TestInitDeath|TestBoxInitIsTheConfiguredBinary|TestBoxRunsCommands|TestBoxFileOperations|TestBoxStartStdin)")
	cmd.Env = append(os.Environ(), testInitEnv+"="+initBin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("escape battery with %s as init: %v\n%s", InitBinaryName, err, out)
	}
	// The battery really ran, with the separate init as PID 1.
	if !strings.Contains(string(out), "--- PASS: TestBoxInitIsTheConfiguredBinary") {
		t.Fatalf("the boxes did not run %s as init:\n%s", InitBinaryName, out)
	}
	if n := strings.Count(string(out), "--- PASS: TestEscape"); n < 10 {
		t.Fatalf("only %d escape tests passed with %s as init:\n%s", n, InitBinaryName, out)
	}
}

// TestBoxInitIsTheConfiguredBinary: the box's PID 1 on the host is the
// resolved init program (hermes-box-init when configured, else the test
// binary standing for hermes), so the escape battery run under
// TestEscapeBatteryWithInitBinary really tests the separate init.
func TestBoxInitIsTheConfiguredBinary(t *testing.T) {
	e := startTestBox(t, nil)
	b, err := e.m.Box(context.Background(), "test-task")
	must(t, err)
	exe, err := os.Readlink("/proc/" + strconv.Itoa(b.InitPID()) + "/exe")
	must(t, err)
	want := os.Getenv(testInitEnv)
	if want == "" {
		want, err = os.Executable()
		must(t, err)
	}
	if filepath.Clean(strings.TrimSuffix(exe, " (deleted)")) != filepath.Clean(want) {
		t.Fatalf("box init runs %s, want %s", exe, want)
	}
}
