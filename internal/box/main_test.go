package box

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as the box init: the Manager re-execs
// os.Executable() with InitArg, exactly as the hermes binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == InitArg {
		os.Exit(InitMain())
	}
	os.Exit(m.Run())
}
