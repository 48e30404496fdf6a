package session

import (
	"slices"
	"testing"
)

// Toolsets lists the toolsets `hermes setup tools` offers: those of the
// built-in tools.
func TestToolsetsListsBuiltins(t *testing.T) {
	got := Toolsets()
	for _, want := range []string{"terminal", "file", "memory", "skills"} {
		if !slices.Contains(got, want) {
			t.Errorf("Toolsets() = %v, missing %s", got, want)
		}
	}
}
