package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSkillsCreateFromFIFOIsRefused: `hermes skills create --from` on a
// FIFO (a workspace file a command replaced) says so in one line instead
// of waiting for a writer forever.
func TestSkillsCreateFromFIFOIsRefused(t *testing.T) {
	app, _, errOut, _ := skillsTestApp(t, "")
	fifo := filepath.Join(t.TempDir(), "SKILL.md")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	code := app.Run(context.Background(), []string{"skills", "create", "piped", "--from", fifo})
	if code != 1 || !strings.Contains(errOut.String(), "is a named pipe (FIFO), not a regular file") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
