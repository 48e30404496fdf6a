// Command hermes is the hermes agent. This file only wires the process to
// internal/cli.
package main

import (
	"os"

	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/cli"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == box.InitArg {
		os.Exit(box.InitMain()) // hidden: this process is a box's PID 1
	}
	if len(os.Args) > 1 && os.Args[1] == local.SupervisorArg {
		os.Exit(local.SupervisorMain()) // hidden: ends local commands when hermes dies
	}
	ctx, stop := cli.SignalContext()
	code := cli.NewApp().Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
