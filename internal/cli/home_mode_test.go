package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// A HERMES_HOME hermes creates is its owner's alone (0700): it holds .env,
// sessions and the image store (the attacker trial's F3 found it 0755).
// An existing home keeps its mode.
func TestCreatedHomeIsTheOwnersAlone(t *testing.T) {
	for _, args := range [][]string{{"skills", "list"}, {"config", "set", "terminal.timeout", "300"}} {
		ta := newTestApp(t, nil, "", false)
		home := filepath.Join(ta.home, "fresh")
		ta.Getenv = func(k string) string {
			if k == "HERMES_HOME" {
				return home
			}
			return ""
		}
		if code := ta.run(args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, ta.stderr)
		}
		if st, err := os.Stat(home); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%v: HERMES_HOME %s mode %v, %v; want 0700", args, home, st.Mode().Perm(), err)
		}
	}
	ta := newTestApp(t, nil, "", false)
	if err := os.Chmod(ta.home, 0o750); err != nil {
		t.Fatal(err)
	}
	if code := ta.run("skills", "list"); code != 0 {
		t.Fatalf("skills list: %d %s", code, ta.stderr)
	}
	if st, _ := os.Stat(ta.home); st.Mode().Perm() != 0o750 {
		t.Errorf("an existing home's mode changed to %v", st.Mode().Perm())
	}
}
