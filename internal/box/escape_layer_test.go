package box

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/egress"
)

// Escapes through the persistent layer: before pivot_root the init works
// on the box's root as a host path, as root, while that root holds what
// the box left in its upper layer. These tests plant symlinks there (as a
// box can, e.g. by renaming an emptied directory in one session and
// linking its name, or through a restored snapshot) and start the box.

const testCAPEM = "-----BEGIN CERTIFICATE-----\nhermes-test-box-ca\n-----END CERTIFICATE-----\n"

// persistentTestManager is a Manager of persistent boxes with an egress
// session that only carries a CA (so that the init installs it).
func persistentTestManager(t *testing.T, edit func(*Options)) *Manager {
	t.Helper()
	needBoxes(t)
	tr := true
	opts := Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(t.TempDir()), Home: t.TempDir(),
		NewEgress: func(string) (*egress.BoxSession, error) {
			return &egress.BoxSession{CACertPEM: []byte(testCAPEM)}, nil
		}}
	opts.Terminal.ContainerPersistent = &tr
	if edit != nil {
		edit(&opts)
	}
	m, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// listTree lists every path under dir with its size (a host-side view).
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out = append(out, strings.TrimPrefix(p, dir)+" "+fi.Mode().String()+" "+strconv.FormatInt(fi.Size(), 10))
		}
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// plantLinks starts nothing: it writes symlinks rel -> target into the
// persistent upper layer of task.
func plantLinks(t *testing.T, m *Manager, task string, links map[string]string) {
	t.Helper()
	err := m.WithUpper(task, true, func(upper string) error {
		for rel, target := range links {
			p := filepath.Join(upper, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			os.RemoveAll(p)
			if err := os.Symlink(target, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// openPlanted starts the box of task and returns it for commands.
func openPlanted(t *testing.T, m *Manager, task string) *testBoxEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := m.Open(ctx, task)
	if err != nil {
		t.Fatalf("box with planted links did not start: %v", err)
	}
	return &testBoxEnv{m: m, env: env}
}

func TestEscapeLayerSymlinkCAInstall(t *testing.T) {
	victims := t.TempDir() // the host directory the planted links point at
	victim := filepath.Join(victims, "victim.sh")
	if err := os.WriteFile(victim, []byte("#!/bin/sh\necho original\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := persistentTestManager(t, nil)
	plantLinks(t, m, "ca-links", map[string]string{
		"etc/ssl/certs/ca-certificates.crt": victim,
		"etc/hermes":                        victims,
	})
	before := listTree(t, victims)
	e := openPlanted(t, m, "ca-links")
	if data, _ := os.ReadFile(victim); string(data) != "#!/bin/sh\necho original\n" {
		t.Fatalf("host file behind a planted link was written: %q", data)
	}
	if after := listTree(t, victims); after != before {
		t.Fatalf("box start changed the host through planted links:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	res := e.run(t, "cat /etc/hermes/box-ca.crt; grep -c hermes-test-box-ca /etc/ssl/certs/ca-certificates.crt")
	if trimmed(res) != strings.TrimSpace(testCAPEM)+"\n1" {
		t.Fatalf("the box's CA files are not in place (exit %d): %q", res.ExitCode, res.Output)
	}
}

func TestEscapeLayerSymlinkMountPoints(t *testing.T) {
	victims := t.TempDir()
	m := persistentTestManager(t, nil)
	// Links at every mount point the init makes before pivot_root (the
	// workspace, a t.TempDir, lies under /tmp): dangling ones, and ones to
	// existing host directories.
	os.Mkdir(filepath.Join(victims, "run"), 0o755)
	os.Mkdir(filepath.Join(victims, "tmp"), 0o755)
	plantLinks(t, m, "mount-links", map[string]string{
		"proc":    filepath.Join(victims, "proc"),
		"dev":     filepath.Join(victims, "dev"),
		"tmp":     filepath.Join(victims, "tmp"),
		"run":     filepath.Join(victims, "run"),
		"var/tmp": filepath.Join(victims, "vartmp"),
	})
	before := listTree(t, victims)
	e := openPlanted(t, m, "mount-links")
	ws := m.workspace()
	res := e.run(t, "test -r /proc/self/status && test -c /dev/null && test -d /dev/pts && "+
		"touch /tmp/x /run/x /var/tmp/x && echo mounts-ok; pwd; findmnt -n -o TARGET / >/dev/null; ls -ld /tmp /proc /dev | cut -c1")
	out := string(res.Output)
	if !strings.Contains(out, "mounts-ok") || !strings.Contains(out, ws) || strings.Contains(out, "l\n") {
		t.Fatalf("box mounts not set up on real directories (exit %d): %s", res.ExitCode, out)
	}
	if after := listTree(t, victims); after != before {
		t.Fatalf("box start changed the host through planted links:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
