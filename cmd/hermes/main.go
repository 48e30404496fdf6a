// Command hermes is the hermes agent. This file only wires the process to
// internal/cli. The binary answers to any name: `make install` also links it
// as hermes-agent (Hermes Agent's entry name), which runs the same commands.
package main

import (
	"os"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/cli"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == box.InitArg {
		os.Exit(box.InitMain()) // hidden: this process is a box's PID 1
	}
	ctx, stop := cli.SignalContext()
	code := cli.NewApp().Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
