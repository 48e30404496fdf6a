package cli

import "testing"

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
