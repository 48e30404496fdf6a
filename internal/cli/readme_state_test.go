package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's HERMES_HOME table names the state hermes box start keeps
// (a new user found boxes-started/ in their home and no word about it).
func TestReadmeStateTableListsStartedBoxes(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := "| `" + filepath.Base(startedDir("/h")) + "/` |"
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, row) {
			if !strings.Contains(line, "hermes box start") || !strings.Contains(line, "hermes box stop") {
				t.Errorf("README row does not say what keeps it: %s", line)
			}
			return
		}
	}
	t.Errorf("README.md's HERMES_HOME table has no row starting %q", row)
}
