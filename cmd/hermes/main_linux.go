// Command hermes is the hermes agent. This file only wires the process to
// internal/cli. The binary answers to any name: `make install` also links it
// as hermes-agent (Hermes Agent's entry name), which runs the same commands,
// and as hermes-acp, which runs `hermes acp` (the editors' ACP entry). A
// box whose users may sudo binds it as sudo (initproc.SudoMain).
package main

import (
	"os"
	"path/filepath"

	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/cli"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == wire.InitArg {
		os.Exit(initproc.InitMain()) // hidden: this process is a box's PID 1
	}
	if len(os.Args) > 1 && os.Args[1] == local.PIDInitArg {
		os.Exit(local.PIDInitMain()) // hidden: PID 1 of the local commands' PID namespace
	}
	if filepath.Base(os.Args[0]) == initproc.SudoEntry {
		os.Exit(initproc.SudoMain(os.Args[1:])) // bound as sudo in a box with sudo
	}
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == cli.ACPEntry {
		args = append([]string{"acp"}, args...)
	} else if cli.OnlyVersion(args) { // nothing else built for `--version`
		exe, _ := os.Executable()
		cli.PrintVersion(os.Stdout, exe)
		os.Exit(0)
	}
	ctx, stop := cli.SignalContext()
	code := cli.NewApp().Run(ctx, args)
	stop()
	os.Exit(code)
}
