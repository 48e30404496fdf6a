package box

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Host mode shows only what a toolchain needs of the host's root.

func TestHostModeHidesRootOnlyFilesOutsideToolchain(t *testing.T) {
	e := startTestBox(t, nil)
	var nonEmpty []string
	for _, d := range []string{"/var/log", "/var/backups", "/var/mail", "/var/spool", "/var/lib/systemd", "/var/cache/man",
		"/srv", "/mnt", "/media", "/boot", "/root", "/home", "/var/lib/docker", "/var/lib/cloud", "/etc/kubernetes"} {
		if entries, err := os.ReadDir(d); err == nil && len(entries) > 0 {
			nonEmpty = append(nonEmpty, d)
		}
	}
	if len(nonEmpty) == 0 {
		t.Skip("no host directory to check is non-empty on this machine")
	}
	for _, d := range nonEmpty {
		res := e.run(t, "ls -A "+d)
		if out := trimmed(res); out != "" {
			t.Errorf("host %s visible in the box: %q", d, out)
		}
	}
	// what a toolchain needs is there
	res := e.run(t, "test -r /etc/passwd && test -x /bin/sh && test -d /usr/lib && echo base-ok; "+
		"if [ -e /var/lib/dpkg/status ]; then dpkg-query -W dpkg >/dev/null && echo dpkg-ok; else echo dpkg-ok; fi")
	if !strings.Contains(string(res.Output), "base-ok") || !strings.Contains(string(res.Output), "dpkg-ok") {
		t.Fatalf("toolchain paths missing in the box: %s", res.Output)
	}
	if _, err := os.Stat("/var/cache/debconf/passwords.dat"); err == nil {
		if r := e.run(t, "test -c /var/cache/debconf/passwords.dat && echo covered"); trimmed(r) != "covered" {
			t.Errorf("debconf passwords.dat not covered: %q", r.Output)
		}
	}
	// the emptied directories stay the box's own to write in
	if r := e.run(t, "echo mine > /srv/box-file && cat /srv/box-file"); trimmed(r) != "mine" {
		t.Fatalf("/srv not writable in the box: %q", r.Output)
	}
	if _, err := os.Stat("/srv/box-file"); err == nil {
		os.Remove("/srv/box-file")
		t.Fatal("a write to the box's /srv reached the host")
	}
}

func TestHostModeWorkspaceInsideHiddenDirectory(t *testing.T) {
	needBoxes(t)
	// a top-level host directory (not under /tmp, which is the box's own
	// tmpfs), removed in Cleanup
	top, err := os.MkdirTemp("/", "hermes-test-top-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	project := filepath.Join(top, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(top, "secret.txt"), []byte("host-only-marker"), 0o600)
	os.WriteFile(filepath.Join(project, "main.go"), []byte("package main"), 0o644)
	e := startTestBox(t, func(o *Options) { o.Terminal.Cwd = project })
	res := e.run(t, "cat main.go; echo; cat "+top+"/secret.txt 2>/dev/null; ls -A "+top)
	out := string(res.Output)
	if strings.Contains(out, "host-only-marker") || strings.Contains(out, "secret.txt") {
		t.Fatalf("a host directory outside the toolchain paths is visible: %s", out)
	}
	if !strings.HasPrefix(out, "package main") {
		t.Fatalf("the workspace inside an emptied directory is not mounted at its path: %s", out)
	}
	if r := e.run(t, "echo new > made.txt"); r.ExitCode != 0 {
		t.Fatalf("workspace not writable: %s", r.Output)
	}
	if data, _ := os.ReadFile(filepath.Join(project, "made.txt")); string(data) != "new\n" {
		t.Fatalf("workspace write did not reach the host: %q", data)
	}
}

func TestWorkspaceRootRefused(t *testing.T) {
	needBoxes(t)
	m, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal("/"), Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Open(context.Background(), "test-task")
	if err == nil || !strings.Contains(err.Error(), "workspace is /") || !strings.Contains(err.Error(), "terminal.cwd") {
		t.Fatalf("workspace / should be refused with the fix, got %v", err)
	}
}
