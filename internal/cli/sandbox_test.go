package cli

import (
	"os"
	"path/filepath"
	"strings"
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

// --catalog names a PostgreSQL server: one that cannot be reached is an
// error naming its host and the flag, never the URL's password.
func TestSandboxServeCatalogErrorHidesPassword(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	code := ta.run("sandbox", "serve", "--catalog", "postgres://hermes:s3cret-pw@127.0.0.1:1/fleet?connect_timeout=2")
	if out := ta.stderr.String(); code == 0 || strings.Contains(out, "s3cret-pw") || !strings.Contains(out, "127.0.0.1:1") || !strings.Contains(out, "--catalog") {
		t.Fatalf("unreachable catalog: %d %s", code, out)
	}
	ta = newTestApp(t, map[string]string{"HERMES_DATABASE_URL": "mysql://x"}, "", false)
	if code := ta.run("sandbox", "serve"); code == 0 || !strings.Contains(ta.stderr.String(), "HERMES_DATABASE_URL is not a postgres:// URL") {
		t.Fatalf("a non-PostgreSQL URL: %d %s", code, ta.stderr)
	}
}
