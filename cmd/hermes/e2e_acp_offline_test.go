package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// readmeACPCommand is how the README's "Editors (ACP)" section tells a
// person to try `hermes acp` offline; the test runs the same script.
const readmeACPCommand = "HERMES=$PWD/bin/hermes bash examples/acp/try.sh"

// The README's offline ACP example works: examples/acp/try.sh sends
// initialize, session/new and session/prompt to the built binary with
// the scripted model (--provider replay), and the answer comes back.
func TestACPOfflineExampleFromREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), readmeACPCommand) {
		t.Fatalf("README.md no longer shows %q: update this test with it", readmeACPCommand)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "examples/acp/try.sh")
	cmd.Dir = "../.."
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "HERMES_HOME=" + t.TempDir(), "HERMES=" + hermesBin}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("try.sh: %v\n%s", err, out)
	}
	notes, _ := filepath.Abs("../../examples/acp/notes.md")
	for _, want := range []string{
		`"sessionUpdate":"tool_call"`, notes, // the read_file call, on the example's notes
		"The notes say the release is ready", // the model's answer
		"stop reason: end_turn",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("try.sh output lacks %q:\n%s", want, out)
		}
	}
}

// Hermes' `hermes acp` boot flags: --version prints what hermes --version
// prints; --check starts a session runtime here and says ready, or names
// what is missing, without serving the protocol.
func TestACPVersionAndCheckFlags(t *testing.T) {
	e := newE2E(t)
	if res := e.run("acp", "--version"); res.code != 0 || !strings.HasPrefix(res.stdout, "Hermes Agent v") {
		t.Fatalf("acp --version: %s", res)
	}
	if res := e.run("acp", "--check", "--provider", "openrouter", "-m", "some/model"); res.code != 0 ||
		!strings.Contains(res.stdout, "ready (provider openrouter, model some/model") {
		t.Fatalf("acp --check: %s", res)
	}
	e.env = nil // no OPENROUTER_API_KEY
	if res := e.run("acp", "--check", "--provider", "openrouter", "-m", "some/model"); res.code == 0 || !strings.Contains(res.stderr, "OPENROUTER_API_KEY") {
		t.Fatalf("acp --check without a key: %s", res)
	}
}
