package box

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBoxRunsHermesInstalledOutsideUsr: seed 002 starts `hermes gateway
// run` inside a box; a hermes installed into ~/.local or a custom PREFIX
// (a directory a box does not show) must still be on the box's PATH, as
// must its hermes-agent link, and read-only.
func TestBoxRunsHermesInstalledOutsideUsr(t *testing.T) {
	prefix := t.TempDir() // under /tmp: the box has its own /tmp
	bin := filepath.Join(prefix, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "hermes")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho \"hermes fake-1.2.3 as $(basename $0)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("hermes", filepath.Join(bin, "hermes-agent")); err != nil {
		t.Fatal(err)
	}
	init := os.Getenv(testInitEnv)
	if init == "" {
		init, _ = os.Executable()
	}
	e := startTestBox(t, func(o *Options) { o.Executable = exe; o.InitBinary = init })
	res := e.run(t, `hermes --version; hermes-agent --version; ls `+bin+` 2>&1; echo x > /opt/hermes/bin/hermes 2>/dev/null && echo WROTE`)
	out := string(res.Output)
	if !strings.Contains(out, "hermes fake-1.2.3 as hermes\n") || !strings.Contains(out, "hermes fake-1.2.3 as hermes-agent\n") {
		t.Fatalf("hermes not runnable in the box: %q", out)
	}
	if strings.Contains(out, "WROTE") {
		t.Fatalf("the box could write the host's hermes binary: %q", out)
	}
	if b, _ := os.ReadFile(exe); !strings.Contains(string(b), "fake-1.2.3") {
		t.Fatalf("host binary changed: %q", b)
	}
}
