package box

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

func TestLimitCPUThrottles(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.Terminal.ContainerCPU = 0.2 })
	ctx := context.Background()
	b, err := e.m.Box(ctx, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.env.Start(ctx, backend.ExecRequest{Command: "while :; do :; done"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	// On a loaded machine the loop may get less than its quota (and so is
	// never throttled): it passes once throttled, fails when it ran well
	// above 0.2 cores for 2 s, and is skipped when it never got its quota.
	began := time.Now()
	for ; ; time.Sleep(20 * time.Millisecond) {
		st, err := b.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.ThrottledPeriod > 0 {
			return
		}
		wall := time.Since(began)
		if cores := st.CPUUsage.Seconds() / wall.Seconds(); wall > 2*time.Second && cores > 0.3 {
			t.Fatalf("a busy loop limited to 0.2 cores ran at %.2f cores for %s, never throttled: %+v", cores, wall, st)
		}
		if wall > 20*time.Second {
			t.Skipf("the busy loop got only %s of CPU in %s (machine overloaded): it never reached its quota", st.CPUUsage, wall)
		}
	}
}

func TestLimitDiskTmpfsLayer(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.Terminal.ContainerDisk = 16 })
	res := e.run(t, "dd if=/dev/zero of=/root/big bs=1M count=40 2>&1; echo rc=$?")
	if !strings.Contains(string(res.Output), "No space left") {
		t.Fatalf("40 MiB fitted into a 16 MiB layer: %s", res.Output)
	}
}

func TestLimitDiskPersistentLayer(t *testing.T) {
	e := startTestBox(t, func(o *Options) {
		tr := true
		o.Terminal.ContainerPersistent = &tr
		o.Terminal.ContainerDisk = 32
	})
	res := e.run(t, "dd if=/dev/zero of=/root/big bs=1M count=64 2>&1; echo rc=$?")
	if !strings.Contains(string(res.Output), "No space left") {
		t.Fatalf("64 MiB fitted into a 32 MiB layer: %s", res.Output)
	}
}

func TestLimitTimeoutKillsTree(t *testing.T) {
	e := startTestBox(t, nil)
	ctx := context.Background()
	res, err := e.env.Exec(ctx, backend.ExecRequest{
		Command: "sleep 777 & (sleep 778 &); sleep 779", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("not reported as timed out: %+v", res)
	}
	left := e.run(t, "ps -eo args | grep -c '^sleep 77[789]' || true")
	if trimmed(left) != "0" {
		t.Fatalf("%s sleepers of the timed-out command still run", trimmed(left))
	}
}

func TestLimitMemoryHardLimit(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.Terminal.ContainerMemory = 48 })
	b, _ := e.m.Box(context.Background(), "test-task")
	e.run(t, "head -c 200m /dev/zero | tail > /dev/null")
	st, _ := b.Stats()
	if st.MemoryMaxBytes > 48<<20 {
		t.Fatalf("peak memory %d above the 48 MiB limit", st.MemoryMaxBytes)
	}
	if st.OOMKills == 0 {
		t.Fatalf("no OOM kill recorded: %+v", st)
	}
}

func TestLimitPIDs(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.Terminal.BoxPids = 20 })
	res := e.run(t, "for i in $(seq 40); do sleep 5 & done 2>&1 | grep -c -i 'resource\\|fork' ; kill $(jobs -p) 2>/dev/null; true")
	b, _ := e.m.Box(context.Background(), "test-task")
	st, _ := b.Stats()
	if st.PIDs > 20 {
		t.Fatalf("%d tasks with pids.max 20", st.PIDs)
	}
	if trimmed(res) == "0" {
		t.Fatalf("40 background jobs all started under a limit of 20: %s", res.Output)
	}
}
