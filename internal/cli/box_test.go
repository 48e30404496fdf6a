package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box"
)

// TestMain lets this test binary serve as the box init, as the hermes
// binary does (cmd/hermes dispatches box.InitArg the same way).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == box.InitArg {
		os.Exit(box.InitMain())
	}
	os.Exit(m.Run())
}

func TestParsePublish(t *testing.T) {
	host, port, err := parsePublish("8080:3000")
	if err != nil || host != "127.0.0.1:8080" || port != 3000 {
		t.Fatalf("got %q %d %v", host, port, err)
	}
	for _, bad := range []string{"8080", "x:3000", "8080:0", "8080:70000", ":"} {
		if _, _, err := parsePublish(bad); err == nil || !strings.Contains(err.Error(), "HOSTPORT:BOXPORT") {
			t.Errorf("parsePublish(%q) error %v should show the expected form", bad, err)
		}
	}
}

func TestShellQuoteKeepsArguments(t *testing.T) {
	got := shellQuote([]string{"echo", "it's", "$HOME", "a b"})
	if got != `'echo' 'it'\''s' '$HOME' 'a b'` {
		t.Fatalf("shellQuote = %s", got)
	}
}

// boxCLI runs `hermes args...` with a box-enabled HERMES_HOME.
type boxCLI struct {
	home, ws string
	exe      string
}

func newBoxCLI(t *testing.T) *boxCLI {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("box CLI tests need root")
	}
	if err := box.Preflight(); err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &boxCLI{home: t.TempDir(), ws: t.TempDir(), exe: exe}
	cfg := "terminal:\n  backend: box\n  cwd: " + c.ws + "\n  container_memory: 256\n  container_disk: 64\n  container_persistent: true\n"
	if err := os.WriteFile(filepath.Join(c.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *boxCLI) run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Executable: c.exe, Now: time.Now,
		Getenv: func(k string) string {
			if k == "HERMES_HOME" {
				return c.home
			}
			return ""
		},
		Environ: func() []string { return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := app.Run(ctx, args)
	return out.String(), errb.String(), code
}

func TestBoxCLIExecPersistsAndPassesExitCode(t *testing.T) {
	c := newBoxCLI(t)
	out, errs, code := c.run(t, "", "box", "exec", "t1", "--", "sh", "-c", "echo kept > /root/f; cat /root/f")
	if code != 0 || out != "kept\n" {
		t.Fatalf("exec: code %d out %q err %q", code, out, errs)
	}
	if out, _, code = c.run(t, "", "box", "exec", "t1", "--", "cat", "/root/f"); out != "kept\n" || code != 0 {
		t.Fatalf("second exec did not see the persistent layer: %q %d", out, code)
	}
	if _, _, code = c.run(t, "", "box", "exec", "t1", "--", "sh", "-c", "exit 7"); code != 7 {
		t.Fatalf("exit code %d, want 7", code)
	}
	out, _, _ = c.run(t, "", "box", "ls")
	if !strings.Contains(out, "t1") || !strings.Contains(out, "stopped") {
		t.Fatalf("box ls: %s", out)
	}
	if out, _, code = c.run(t, "echo from-stdin\n", "box", "shell", "t1"); code != 0 || out != "from-stdin\n" {
		t.Fatalf("box shell: %q %d", out, code)
	}
	if _, errs, code = c.run(t, "", "box", "rm", "t1"); code != 0 {
		t.Fatalf("rm: %s", errs)
	}
	if _, errs, code = c.run(t, "", "box", "rm", "t1"); code == 0 || !strings.Contains(errs, "box ls") {
		t.Fatalf("second rm should name the fix: %q", errs)
	}
}

func TestBoxCLISnapshotForkRoundTrip(t *testing.T) {
	c := newBoxCLI(t)
	if _, errs, code := c.run(t, "", "box", "exec", "src", "--", "sh", "-c", "echo one > /root/a; echo two > /root/b; rm /etc/hostname"); code != 0 {
		t.Fatalf("exec: %s", errs)
	}
	out, errs, code := c.run(t, "", "box", "snapshot", "src")
	if code != 0 {
		t.Fatalf("snapshot: %s", errs)
	}
	id := strings.Fields(out)[0]
	out, errs, code = c.run(t, "", "box", "fork", id)
	if code != 0 {
		t.Fatalf("fork: %s", errs)
	}
	fork := strings.TrimSpace(out)
	out, _, _ = c.run(t, "", "box", "exec", fork, "--", "sh", "-c", "cat /root/a /root/b; test -e /etc/hostname || echo deleted")
	if out != "one\ntwo\ndeleted\n" {
		t.Fatalf("fork %s sees %q", fork, out)
	}
	// the source changes on; restoring brings its snapshot state back
	c.run(t, "", "box", "exec", "src", "--", "sh", "-c", "rm /root/a; echo changed > /root/b")
	if _, errs, code = c.run(t, "", "box", "restore", id); code != 0 {
		t.Fatalf("restore: %s", errs)
	}
	if out, _, _ = c.run(t, "", "box", "exec", "src", "--", "cat", "/root/a", "/root/b"); out != "one\ntwo\n" {
		t.Fatalf("restored src sees %q", out)
	}
}
