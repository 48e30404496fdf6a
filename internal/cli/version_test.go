package cli

import (
	"strings"
	"testing"
)

// `hermes --version` prints the release date like Hermes Agent
// (YYYY.M.D, no zero padding) however the build set ReleaseDate.
func TestReleaseDateLabel(t *testing.T) {
	for in, want := range map[string]string{
		"2026.11.30": "2026.11.30",
		"2026.01.05": "2026.1.5",
		"2026-01-05": "2026.1.5",
		"2026.1.5":   "2026.1.5",
		"unknown":    "unknown",
	} {
		if got := releaseDateLabel(in); got != want {
			t.Errorf("releaseDateLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// The path `hermes --version` prints is the binary's, labelled as such
// (it said "Install directory" in front of a file path).
func TestVersionLabelsTheBinaryPath(t *testing.T) {
	var b strings.Builder
	PrintVersion(&b, "/usr/local/bin/hermes")
	if !strings.Contains(b.String(), "Binary: /usr/local/bin/hermes\n") || strings.Contains(b.String(), "directory") {
		t.Errorf("--version prints:\n%s", b.String())
	}
}
