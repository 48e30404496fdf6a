package box

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/config"
)

// The box benchmarks (issue 3 targets: create + first command within 1.5×
// of a bare bubblewrap run, a warm command ≤ 2 ms). The init is this test
// binary unless HERMES_BOX_BENCH_INIT names a hermes binary (whose larger
// package init is then part of the create figure):
//
//	go build -o /tmp/hermes ./cmd/hermes
//	HERMES_BOX_BENCH_INIT=/tmp/hermes go test -run '^$' -bench 'Box|Bwrap' ./internal/box/

// bwrapArgv is the bubblewrap peer: every namespace, the host root
// read-only, fresh /dev, /proc and /tmp, running /bin/true.
var bwrapArgv = []string{"--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
	"--proc", "/proc", "--tmpfs", "/tmp", "true"}

// benchOptions are the Options of a benchmark Manager.
func benchOptions(b *testing.B, persistent bool) Options {
	home, ws := b.TempDir(), b.TempDir()
	term := testTerminal(ws)
	term.ContainerPersistent = &persistent
	if persistent {
		term.ContainerDisk = config.Defaults().Terminal.ContainerDisk // 50 GiB
	}
	opts := Options{CgroupRoot: testCgroupRoot(), Terminal: term, Home: home}
	if exe := os.Getenv("HERMES_BOX_BENCH_INIT"); exe != "" {
		opts.InitBinary = exe
	}
	return opts
}

// median of ds in milliseconds.
func medianMs(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// createAndRun starts the box of task, runs `true` in it and reports the
// wall time of both together; the box is stopped (and removed) untimed.
func createAndRun(b *testing.B, m *Manager, task string) (time.Duration, StartPhases) {
	ctx := context.Background()
	t0 := time.Now()
	env, err := m.Open(ctx, task)
	if err != nil {
		b.Fatal(err)
	}
	opened := time.Now()
	if res, err := env.Exec(ctx, backend.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
		b.Fatal(err, res)
	}
	d := time.Since(t0)
	box, _ := m.Box(ctx, task)
	ph := box.StartPhases()
	ph.Total = opened.Sub(t0) // reported as open-ms: Manager.Open, start included
	m.Remove(task)
	return d, ph
}

// runBwrap runs the bubblewrap peer once.
func runBwrap(b *testing.B, bwrap string) time.Duration {
	t0 := time.Now()
	if out, err := exec.Command(bwrap, bwrapArgv...).CombinedOutput(); err != nil {
		b.Fatalf("bwrap: %v %s", err, out)
	}
	return time.Since(t0)
}

// benchCreateVsBwrap alternates a box create + first command with a bare
// bubblewrap run (so both see the same machine load) and reports the
// medians and their ratio, plus the median start phases of the box.
func benchCreateVsBwrap(b *testing.B, persistent, prestart bool) {
	needBoxes(b)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bubblewrap is not installed (apt-get install bubblewrap)")
	}
	opts := benchOptions(b, persistent)
	opts.Prestart = prestart
	m, err := NewManager(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	createAndRun(b, m, "bench-warmup")
	runBwrap(b, bwrap)
	var boxes, bwraps []time.Duration
	phases := map[string][]time.Duration{}
	for i := 0; b.Loop(); i++ {
		if prestart {
			waitSpare(b, m) // untimed: in use the spare boots while the model thinks
		}
		d, ph := createAndRun(b, m, fmt.Sprintf("bench-%d", i))
		if prestart {
			waitSpare(b, m) // the next spare is made after the first command: not while bwrap runs
		}
		boxes = append(boxes, d)
		for name, v := range map[string]time.Duration{"prepare": ph.Prepare, "disk": ph.Disk, "spawn": ph.Spawn,
			"boot": ph.Boot, "root": ph.Root, "restrict": ph.Restrict, "attach": ph.Attach, "mount": ph.Mount, "open": ph.Total} {
			phases[name] = append(phases[name], v)
		}
		bwraps = append(bwraps, runBwrap(b, bwrap))
	}
	box, bw := medianMs(boxes), medianMs(bwraps)
	b.ReportMetric(box, "box-ms")
	b.ReportMetric(bw, "bwrap-ms")
	b.ReportMetric(box/bw, "box/bwrap")
	for name, ds := range phases {
		b.ReportMetric(medianMs(ds), name+"-ms")
	}
}

// BenchmarkBoxCreateVsBwrap: a non-persistent box (tmpfs layer, host
// base), with the init spawned on demand (cold) or prestarted
// (Options.Prestart).
func BenchmarkBoxCreateVsBwrap(b *testing.B) {
	b.Run("cold", func(b *testing.B) { benchCreateVsBwrap(b, false, false) })
	b.Run("prestarted", func(b *testing.B) { benchCreateVsBwrap(b, false, true) })
}

// BenchmarkBoxCreatePersistentVsBwrap: a new persistent box (an ext4
// layer image of terminal.container_disk MiB, the 50 GiB default).
func BenchmarkBoxCreatePersistentVsBwrap(b *testing.B) {
	b.Run("cold", func(b *testing.B) { benchCreateVsBwrap(b, true, false) })
	b.Run("prestarted", func(b *testing.B) { benchCreateVsBwrap(b, true, true) })
}

// BenchmarkBoxWarmCommand measures one command in a running box: through
// the shell as the terminal tool runs it (`bash -c true`), and /bin/true
// exec'd directly, to show what bash costs.
func BenchmarkBoxWarmCommand(b *testing.B) {
	e := startTestBox(b, nil)
	box, err := e.m.Box(context.Background(), "test-task")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("bash-c-true", func(b *testing.B) {
		req := backend.ExecRequest{Command: "true"}
		for b.Loop() {
			if res, err := e.env.Exec(ctx, req); err != nil || res.ExitCode != 0 {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("stat-roundtrip", func(b *testing.B) { // the protocol alone: one request, one reply
		for b.Loop() {
			if _, err := box.Stat(ctx, "/"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("exec-true", func(b *testing.B) {
		for b.Loop() {
			p, err := box.startArgv(ctx, []string{"/bin/true"}, backend.ExecRequest{}, false)
			if err != nil {
				b.Fatal(err)
			}
			if res, err := p.Wait(ctx); err != nil || res.ExitCode != 0 {
				b.Fatal(err, res)
			}
		}
	})
	// What another hermes process pays (less its own start): connect to
	// the attach socket, hello, true looked up in PATH, exit, hang up.
	b.Run("attach-exec-true", func(b *testing.B) {
		for b.Loop() {
			ab, err := Attach(ctx, e.home, "test-task")
			if err != nil {
				b.Fatal(err)
			}
			p, err := ab.Command(ctx, Command{Argv: []string{"true"}})
			if err != nil {
				b.Fatal(err)
			}
			if res, err := p.Wait(ctx); err != nil || res.ExitCode != 0 {
				b.Fatal(err, res)
			}
			ab.Close()
		}
	})
}

// BenchmarkHostSpawn is the floor on this machine: the same two commands
// started with os/exec on the host, outside any box.
func BenchmarkHostSpawn(b *testing.B) {
	for _, argv := range [][]string{{"/bin/bash", "-c", "true"}, {"/bin/true"}} {
		b.Run(argv[0]+map[bool]string{true: "-c-true", false: ""}[len(argv) > 1], func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
