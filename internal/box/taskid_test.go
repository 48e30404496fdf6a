package box

import (
	"strings"
	"testing"
)

// TestTaskIDsThatNameDirectories checks which task ids a box accepts: they
// name a state directory and a cgroup, so nothing that could leave
// HERMES_HOME/boxes or hide as a dot file gets through.
func TestTaskIDsThatNameDirectories(t *testing.T) {
	for _, ok := range []string{"a", "Z9", "sess-2026.11_30", strings.Repeat("x", 128)} {
		if err := checkTaskID(ok); err != nil {
			t.Errorf("checkTaskID(%q) = %v, want accepted", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".spare", "-x", "_x", "a/b", "../etc", "a b", "é", "a\x00",
		strings.Repeat("x", 129), "snapshots", "images"} {
		if err := checkTaskID(bad); err == nil {
			t.Errorf("checkTaskID(%q) accepted, want an error", bad)
		}
	}
}
