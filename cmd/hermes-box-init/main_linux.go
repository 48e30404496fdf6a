// Command hermes-box-init is the PID 1 of every hermes box: hermes starts
// it in the box's new namespaces with its control sockets on fds 3 and 4
// (internal/box/initproc InitMain). It is a separate small program so that a box's
// init pays no provider SDK's, TUI's or database's package inits; hermes
// finds it beside its own executable and falls back to re-executing itself
// (`hermes box-init`, the same InitMain) when it is missing. A test keeps
// its dependencies small (deps_test.go).
package main

import (
	"fmt"
	"os"

	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/box/wire"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == wire.ProtocolArg {
		fmt.Println(wire.Version) // hermes doctor's question
		return
	}
	if len(os.Args) < 2 || os.Args[1] != wire.InitArg {
		fmt.Fprintln(os.Stderr, "hermes-box-init is a box's PID 1, started by hermes; it is not a command to run")
		os.Exit(2)
	}
	os.Exit(initproc.InitMain())
}
