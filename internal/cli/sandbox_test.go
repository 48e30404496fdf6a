package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A blank key (an --api-key " " or a line of spaces in the keys file)
// satisfied "a key is required off loopback" while no client could use
// it; it is refused at start.
func TestSandboxServeRefusesBlankKeys(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("sandbox", "serve", "--api-addr", "0.0.0.0:0", "--api-key", " "); code == 0 || !strings.Contains(ta.stderr.String(), "empty or blank") {
		t.Fatalf("blank --api-key: %d %s", code, ta.stderr)
	}
	keys := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keys, []byte("# only comments\n\n"), 0o600)
	ta = newTestApp(t, nil, "", false)
	if code := ta.run("sandbox", "serve", "--api-addr", "0.0.0.0:0", "--api-keys-file", keys); code == 0 || !strings.Contains(ta.stderr.String(), keys+" holds no keys") {
		t.Fatalf("keys file without a key: %d %s", code, ta.stderr)
	}
}

// New-user trial: an empty --api-keys-file on loopback ran keyless without
// a word; a short key was accepted; a world-readable keys file went
// unremarked. The first two are refused (naming the file and line, never
// the key), the last warned about once.
func TestSandboxServeKeysFileChecks(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("sandbox", "serve", "--api-keys-file", empty); code == 0 || !strings.Contains(ta.stderr.String(), empty+" holds no keys") ||
		!strings.Contains(ta.stderr.String(), "openssl rand") {
		t.Fatalf("empty keys file on loopback: %d %s", code, ta.stderr)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("# keys\n0123456789abcdef0123\nshortkey7\n"), 0o644)
	ta = newTestApp(t, nil, "", false)
	code := ta.run("sandbox", "serve", "--api-keys-file", short)
	errs := ta.stderr.String()
	if code == 0 || !strings.Contains(errs, short+" line 3") || strings.Contains(errs, "shortkey7") {
		t.Fatalf("short key: %d %s", code, errs)
	}
	if strings.Count(errs, "chmod 600 "+short) != 1 {
		t.Errorf("mode 0644 keys file: want one chmod 600 warning: %s", errs)
	}
	var warn strings.Builder
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("0123456789abcdef0123\n"), 0o600)
	if keys, _, err := readKeys(good, &warn); err != nil || len(keys) != 1 || warn.Len() != 0 {
		t.Errorf("good keys file: %v %v warn %q", keys, err, warn.String())
	}
}

// --catalog names a PostgreSQL server: one that cannot be reached is
// retried until SIGTERM, then an error naming its host and the flag, never
// the URL's password.
func TestSandboxServeCatalogErrorHidesPassword(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	logs := &logLines{retried: make(chan struct{}, 1)}
	ta.Stderr = io.MultiWriter(ta.stderr, logs)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-logs.retried
		cancel(SignalError{Signal: syscall.SIGTERM})
	}()
	code := ta.Run(ctx, []string{"sandbox", "serve", "--catalog", "postgres://hermes:s3cret-pw@127.0.0.1:1/fleet?connect_timeout=2"})
	if out := ta.stderr.String(); code == 0 || strings.Contains(out, "s3cret-pw") || !strings.Contains(out, "127.0.0.1:1") || !strings.Contains(out, "--catalog") {
		t.Fatalf("unreachable catalog: %d %s", code, out)
	}
	ta = newTestApp(t, map[string]string{"HERMES_DATABASE_URL": "mysql://x"}, "", false)
	if code := ta.run("sandbox", "serve"); code == 0 || !strings.Contains(ta.stderr.String(), "HERMES_DATABASE_URL is not a postgres:// URL") {
		t.Fatalf("a non-PostgreSQL URL: %d %s", code, ta.stderr)
	}
}

// --template NAME=IMAGE is checked before the server starts: each bad
// form gets an error naming the flag and what to write.
func TestSandboxServeTemplateFlags(t *testing.T) {
	cases := []struct{ flag, want string }{
		{"python", "write NAME=IMAGE"},
		{"=docker.io/library/python:3.12", "write NAME=IMAGE"},
		{"py/thon=docker.io/library/python:3.12", `the name "py/thon" must be a word`},
		{"py=host", `"host" is not an OCI image`},
		{"py=docker.io/library/Python:3.12", "--template"},
	}
	for _, c := range cases {
		ta := newTestApp(t, nil, "", false)
		if code := ta.run("sandbox", "serve", "--template", c.flag); code == 0 || !strings.Contains(ta.stderr.String(), c.want) ||
			!strings.Contains(ta.stderr.String(), "--template") {
			t.Errorf("--template %q: exit %d, stderr %q, want an error with %q", c.flag, code, ta.stderr, c.want)
		}
	}
	ta := newTestApp(t, nil, "", false)
	if code := ta.run("sandbox", "serve", "--template", "py=127.0.0.1:5000/py:1", "--template", "py=127.0.0.1:5000/py:2"); code == 0 ||
		!strings.Contains(ta.stderr.String(), `template "py" is given twice`) {
		t.Errorf("a template given twice: exit %d, stderr %q", code, ta.stderr)
	}
}
