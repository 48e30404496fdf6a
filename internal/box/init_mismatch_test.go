package box

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hermes-box-init of an older build beside hermes (one binary updated,
// not the other) is named with the fix, before a frame of one encoding is
// read as the other (a new user's trial: "box init exited during setup:
// EOF ... gob: encoded unsigned integer out of range"). The fake init
// writes the boot byte inits of protocol 1 and older wrote.
func TestAnOlderInitIsNamed(t *testing.T) {
	needBoxes(t)
	script := filepath.Join(t.TempDir(), InitBinaryName)
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf B >&3\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	m, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(ws), Home: t.TempDir(), InitBinary: script})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Box(context.Background(), "old-init")
	if !errors.Is(err, ErrInitMismatch) || !strings.Contains(err.Error(), "older hermes") || !strings.Contains(err.Error(), "same build") {
		t.Fatalf("box start with an older init: %v, want it named with the fix", err)
	}
}
