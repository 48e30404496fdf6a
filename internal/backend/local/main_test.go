package local

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for the hermes binary as the
// commands' PID namespace keeper (Options.PIDInit, pidns.go).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == PIDInitArg {
		os.Exit(PIDInitMain())
	}
	os.Exit(m.Run())
}

// testExecutable is the test binary, which runs PIDInitMain like hermes.
func testExecutable(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
