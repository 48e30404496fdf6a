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
	if code := ta.run("sandbox", "serve", "--api-addr", "0.0.0.0:0", "--api-keys-file", keys); code == 0 || !strings.Contains(ta.stderr.String(), "API key is required") {
		t.Fatalf("keys file without a key: %d %s", code, ta.stderr)
	}
}
