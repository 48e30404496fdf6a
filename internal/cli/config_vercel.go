package cli

import (
	"fmt"
	"strconv"

	"github.com/hermes-go/hermes/internal/backend/vercel"
	"github.com/hermes-go/hermes/internal/config"
)

// checkVercelSize checks `hermes config set` of terminal.backend,
// terminal.container_cpu or terminal.container_memory against Vercel
// Sandbox's rule when the backend is (or becomes) vercel_sandbox, as
// `hermes config check` does (config.Loaded.Problems; seed 004: 2,048 MB
// of memory per whole vCPU). A value that can never be valid (memory not
// a multiple of 2,048, a fractional or zero CPU count) is an error and
// nothing is saved; a pair that does not match yet, as while the seed
// sets one key after the other, gives a note naming the next command.
func (a *App) checkVercelSize(key, value string) (note string, err error) {
	if key != "terminal.backend" && key != "terminal.container_cpu" && key != "terminal.container_memory" {
		return "", nil
	}
	l, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return "", nil // config.Set reports a broken config.yaml
	}
	backend, cpu, mem := l.Config.Terminal.Backend, l.Config.Terminal.ContainerCPU, l.Config.Terminal.ContainerMemory
	switch key {
	case "terminal.backend":
		backend = value
	case "terminal.container_cpu":
		if cpu, err = strconv.ParseFloat(value, 64); err != nil {
			return "", nil // config.Set rejects it with the type
		}
	case "terminal.container_memory":
		if mem, err = strconv.Atoi(value); err != nil {
			return "", nil
		}
	}
	if backend != vercel.Kind {
		return "", nil
	}
	whole := cpu >= 1 && cpu == float64(int(cpu))
	switch {
	case key == "terminal.container_memory" && (mem < vercel.MemoryPerCPU || mem%vercel.MemoryPerCPU != 0):
		want := vercel.MemoryPerCPU
		if whole {
			want = int(cpu) * vercel.MemoryPerCPU
		}
		return "", fmt.Errorf("terminal.container_memory %s is not valid for terminal.backend vercel_sandbox: Vercel Sandbox allocates 2,048 MB "+
			"of memory per vCPU, so it must be 2,048 × terminal.container_cpu (%v now): hermes config set terminal.container_memory %d", value, cpu, want)
	case key == "terminal.container_cpu" && !whole:
		return "", fmt.Errorf("terminal.container_cpu %s is not valid for terminal.backend vercel_sandbox: Vercel Sandbox needs a whole number of vCPUs (1, 2, 4, 8)", value)
	case !whole:
		return fmt.Sprintf("terminal.container_cpu %v is not valid for vercel_sandbox (a whole number of vCPUs): hermes config set terminal.container_cpu %d",
			cpu, max(mem/vercel.MemoryPerCPU, 1)), nil
	case mem == int(cpu)*vercel.MemoryPerCPU:
		return "", nil
	case key == "terminal.container_memory":
		return fmt.Sprintf("terminal.container_memory %d needs terminal.container_cpu %d for vercel_sandbox (2,048 MB per vCPU; %v now): hermes config set terminal.container_cpu %d",
			mem, mem/vercel.MemoryPerCPU, cpu, mem/vercel.MemoryPerCPU), nil
	}
	return fmt.Sprintf("terminal.container_memory %d MB does not match terminal.container_cpu %v for vercel_sandbox (2,048 MB per vCPU): hermes config set terminal.container_memory %d",
		mem, cpu, int(cpu)*vercel.MemoryPerCPU), nil
}
