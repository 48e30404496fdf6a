package cli

import (
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/pairing"
)

// A user the platform gave no name (a Telegram account without @username)
// is printed as just its id: no stray space before the period or the
// parenthesis; a named user shows the name in parentheses.
func TestPairingApproveNamesUserCleanly(t *testing.T) {
	ta := newTestApp(t, nil, "", false)
	store := pairing.New(ta.home, ta.Now)
	code, err := store.Request("telegram", "333", "")
	if err != nil {
		t.Fatal(err)
	}
	named, err := store.Request("telegram", "444", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if c := ta.run("pairing", "list"); c != 0 {
		t.Fatal(ta.stderr)
	}
	if out := ta.stdout.String(); !strings.Contains(out, "user 333 (asked") || !strings.Contains(out, "user 444 (alice) (asked") {
		t.Errorf("list:\n%s", out)
	}
	if c := ta.run("pairing", "approve", "telegram", code); c != 0 {
		t.Fatal(ta.stderr)
	}
	if out := ta.stdout.String(); out != "Approved telegram user 333.\n" {
		t.Errorf("approve printed %q", out)
	}
	if c := ta.run("pairing", "approve", "telegram", named); c != 0 {
		t.Fatal(ta.stderr)
	}
	if out := ta.stdout.String(); out != "Approved telegram user 444 (alice).\n" {
		t.Errorf("approve printed %q", out)
	}
}
