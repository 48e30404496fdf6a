package box

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/box/wire"
)

// TestMain lets the test binary act as the box init: the Manager re-execs
// os.Executable() with wire.InitArg, exactly as the hermes binary does.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == initproc.SudoEntry {
		os.Exit(initproc.SudoMain(os.Args[1:])) // bound as sudo (Options.SudoUIDs)
	}
	if len(os.Args) > 1 && os.Args[1] == wire.InitArg {
		os.Exit(initproc.InitMain())
	}
	if len(os.Args) > 1 && os.Args[1] == attachClientArg {
		os.Exit(attachClientMain(os.Args[2:]))
	}
	if len(os.Args) > 4 && os.Args[1] == layerHolderArg {
		os.Exit(layerHolderMain(os.Args[2:]))
	}
	code := m.Run()
	if busy := removeTestCgroupRoot(); len(busy) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "box tests left processes in cgroups: %q\n", busy)
		code = 1
	}
	os.Exit(code)
}
