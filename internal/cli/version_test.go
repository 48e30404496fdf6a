package cli

import (
	"runtime"
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

// `hermes --version` prints Hermes Agent's three lines (seed 002: the
// version, "Install directory: /opt/hermes", the runtime), then the
// binary's path and the install method.
func TestVersionPrintsHermesLines(t *testing.T) {
	for exe, dir := range map[string]string{"/opt/hermes/bin/hermes": "/opt/hermes", "/usr/local/bin/hermes": "/usr/local",
		"/tmp/build/hermes": "/tmp/build"} {
		var b strings.Builder
		PrintVersion(&b, exe)
		lines := strings.Split(b.String(), "\n")
		if len(lines) != 6 || !strings.HasPrefix(lines[0], "Hermes Agent v") || lines[1] != "Install directory: "+dir ||
			lines[2] != "Go: "+strings.TrimPrefix(runtime.Version(), "go") || lines[3] != "Binary: "+exe ||
			!strings.HasPrefix(lines[4], "Install method: ") {
			t.Errorf("--version of %s prints:\n%s", exe, b.String())
		}
	}
}
