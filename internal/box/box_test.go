package box

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"

	"github.com/hermes-go/hermes/internal/waitfor"
)

func TestBoxRunsCommandsInItsOwnNamespaces(t *testing.T) {
	e := startTestBox(t, nil)
	res := e.run(t, "hostname; echo $$; pwd; ls /proc | grep -c '^[0-9]'")
	lines := strings.Fields(string(res.Output))
	if res.ExitCode != 0 || len(lines) != 4 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Output)
	}
	if lines[0] != Hostname {
		t.Errorf("hostname %q, want %q", lines[0], Hostname)
	}
	if lines[2] != e.workspace {
		t.Errorf("workdir %q, want the workspace %q", lines[2], e.workspace)
	}
	if n := lines[3]; len(n) > 1 { // a fresh pid namespace has a handful of processes
		t.Errorf("the box sees %s processes: /proc is not its own", n)
	}
	if r := e.run(t, "exit 3"); r.ExitCode != 3 {
		t.Errorf("exit code %d, want 3", r.ExitCode)
	}
}

func TestBoxWorkspaceBindWritesReachHost(t *testing.T) {
	e := startTestBox(t, nil)
	e.run(t, "echo from-box > made-in-box.txt")
	data, err := os.ReadFile(filepath.Join(e.workspace, "made-in-box.txt"))
	if err != nil || string(data) != "from-box\n" {
		t.Fatalf("workspace write not on the host: %q %v", data, err)
	}
}

func TestBoxWorkspaceOverlayLeavesHostUntouched(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.Terminal.BoxWorkspace = "overlay" })
	os.WriteFile(filepath.Join(e.workspace, "orig.txt"), []byte("host"), 0o644)
	// the overlay was mounted before orig.txt existed on the host; a new box sees it
	e.m.Stop("test-task")
	res := e.run(t, "cat orig.txt; echo; echo changed > orig.txt; echo new > new.txt; cat orig.txt")
	if trimmed(res) != "host\nchanged" {
		t.Fatalf("box view: %q", res.Output)
	}
	if data, _ := os.ReadFile(filepath.Join(e.workspace, "orig.txt")); string(data) != "host" {
		t.Fatalf("host file changed to %q", data)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "new.txt")); err == nil {
		t.Fatal("new file appeared on the host")
	}
}

func TestBoxFileOperations(t *testing.T) {
	e := startTestBox(t, nil)
	ctx := context.Background()
	if err := e.env.WriteFile(ctx, "dir/a.txt", []byte("alpha"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := e.env.ReadFile(ctx, filepath.Join(e.workspace, "dir/a.txt"))
	if err != nil || string(data) != "alpha" {
		t.Fatalf("ReadFile: %q %v", data, err)
	}
	info, err := e.env.Stat(ctx, "dir/a.txt")
	if err != nil || info.Size != 5 || info.IsDir || info.Mode.Perm() != 0o600 {
		t.Fatalf("Stat: %+v %v", info, err)
	}
	list, err := e.env.ReadDir(ctx, "dir")
	if err != nil || len(list) != 1 || list[0].Name != "a.txt" {
		t.Fatalf("ReadDir: %+v %v", list, err)
	}
	if _, err := e.env.ReadFile(ctx, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file error %v does not wrap fs.ErrNotExist", err)
	}
	if err := e.env.WriteFile(ctx, "/proc/sys/kernel/hostname", []byte("x"), 0o644); err == nil {
		t.Fatal("WriteFile into /proc/sys succeeded")
	}
}

func TestBoxStartStdinAndStreaming(t *testing.T) {
	e := startTestBox(t, nil)
	ctx := context.Background()
	var streamed bytes.Buffer
	p, err := e.env.Start(ctx, backend.ExecRequest{Command: "tr a-z A-Z", Stdin: strings.NewReader("hello box\n"), Output: &streamed})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(ctx)
	if err != nil || string(res.Output) != "HELLO BOX\n" || streamed.String() != "HELLO BOX\n" {
		t.Fatalf("result %q streamed %q err %v", res.Output, streamed.String(), err)
	}
	bg, err := e.env.Start(ctx, backend.ExecRequest{Command: "sleep 600"})
	if err != nil {
		t.Fatal(err)
	}
	if bg.Done() || bg.PID() <= 1 {
		t.Fatalf("background process: done=%v pid=%d", bg.Done(), bg.PID())
	}
	bg.Kill()
	r, _ := bg.Wait(ctx)
	if !bg.Done() || r.Signal != "SIGKILL" {
		t.Fatalf("killed process: %+v", r)
	}
}

func TestBoxPersistenceAcrossReopen(t *testing.T) {
	needBoxes(t)
	home, ws := t.TempDir(), t.TempDir()
	tr := true
	term := testTerminal(ws)
	term.ContainerPersistent = &tr
	open := func() (*Manager, backend.Environment) {
		m, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: term, Home: home})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		env, err := m.Open(context.Background(), "resumed")
		if err != nil {
			t.Fatal(err)
		}
		return m, env
	}
	m1, env1 := open()
	if _, err := env1.Exec(context.Background(), backend.ExecRequest{Command: "echo kept > /root/state.txt; rm -f /etc/hostname; sleep 600 &"}); err != nil {
		t.Fatal(err)
	}
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	assertLayerReleased(t, m1.StateDir("resumed"))
	_, env2 := open()
	res, err := env2.Exec(context.Background(), backend.ExecRequest{Command: "cat /root/state.txt; test -e /etc/hostname && echo hostname-back; pgrep -c 'sleep' || true"})
	if err != nil {
		t.Fatal(err)
	}
	if trimmed(res) != "kept\n0" {
		t.Fatalf("after resume: %q (want the file kept, the deletion kept, no process)", res.Output)
	}
}

func TestBoxNonPersistentStateRemovedOnClose(t *testing.T) {
	e := startTestBox(t, nil)
	e.run(t, "echo gone > /root/tmp.txt")
	dir := e.m.StateDir("test-task")
	e.m.Close()
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("state dir %s kept for a non-persistent box", dir)
	}
}

// A non-persistent box leaves nothing once closed, a command still
// running in it included: no state in HERMES_HOME, no cgroup in any
// hierarchy, no mount, no loop device; no process, the group being gone (Close removes most of
// it while the kernel ends the box).
func TestBoxNonPersistentCloseLeavesNothing(t *testing.T) {
	e := startTestBox(t, nil)
	e.run(t, "sleep 1000 >/dev/null 2>&1 & echo x > /root/f")
	b, err := e.m.Box(context.Background(), "test-task")
	if err != nil {
		t.Fatal(err)
	}
	groups := b.cg.Dirs()
	if len(groups) == 0 {
		t.Fatalf("box cgroup %T has no directories", b.cg)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.m.StateDir("test-task")); !os.IsNotExist(err) {
		t.Fatalf("state of the closed box: %v (want it removed)", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.home, "boxes")); len(entries) > 0 {
		t.Fatalf("HERMES_HOME/boxes after Close: %v", entries)
	}
	for _, d := range groups {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("cgroup %s after Close: %v (want it removed)", d, err)
		}
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), e.home) {
		t.Fatalf("mounts under %s left after Close", e.home)
	}
	if l := leftoverLoops(filepath.Join(e.home, "boxes")); len(l) > 0 {
		t.Fatalf("loop devices left after Close: %q", l)
	}
}

func TestBoxIdleStopAndRestart(t *testing.T) {
	var clock = struct{ now time.Time }{time.Now()}
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	now := func() time.Time { <-mu; defer func() { mu <- struct{}{} }(); return clock.now }
	e := startTestBox(t, func(o *Options) { o.Terminal.LifetimeSeconds = 1; o.Now = now })
	<-mu
	clock.now = clock.now.Add(time.Hour)
	mu <- struct{}{}
	deadline := waitfor.Deadline(t)
	for len(e.m.Running()) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle box was not stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := e.run(t, "echo back"); trimmed(r) != "back" {
		t.Fatalf("stopped box did not restart: %s", r.Output)
	}
}

// assertLayerReleased checks what a closed persistent box leaves: its
// layer image committed as disk.img (no temp copy), no loop device backed
// by it and no mount under its state dir.
func assertLayerReleased(t *testing.T, stateDir string) {
	t.Helper()
	image := filepath.Join(stateDir, "disk.img")
	if _, err := os.Stat(image); err != nil {
		t.Fatalf("closed persistent box has no layer image: %v", err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(stateDir, ".disk.img.tmp*")); len(tmps) > 0 {
		t.Fatalf("temp layer images left after Close: %q", tmps)
	}
	if dev := loopDeviceFor(image); dev != "" {
		t.Fatalf("loop device %s still backed by %s after Close", dev, image)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), stateDir) {
		t.Fatalf("mounts under %s left after Close", stateDir)
	}
}
