package box

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// The escape battery: one test per attempt, each in its own box.

// visibleHome makes a HERMES_HOME on the host root filesystem (so that it
// would be visible through the box's host-mode base if it were not
// hidden), with a .env and a state.db holding a marker.
func visibleHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("/", "hermes-test-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	os.WriteFile(filepath.Join(home, ".env"), []byte("ANTHROPIC_API_KEY=sk-ant-host-only-marker\n"), 0o600)
	os.WriteFile(filepath.Join(home, "state.db"), []byte("SQLite format 3\x00host-only-marker"), 0o600)
	return home
}

func TestEscapeReadHermesHome(t *testing.T) {
	home := visibleHome(t)
	e := startTestBox(t, func(o *Options) { o.Home = home })
	res := e.run(t, fmt.Sprintf("cat %s/.env %s/state.db; ls -a %s", home, home, home))
	if strings.Contains(string(res.Output), "host-only-marker") {
		t.Fatalf("box read HERMES_HOME secrets: %s", res.Output)
	}
	ctx := context.Background()
	for _, f := range []string{".env", "state.db"} {
		if data, err := e.env.ReadFile(ctx, filepath.Join(home, f)); err == nil {
			t.Fatalf("ReadFile of HERMES_HOME/%s succeeded: %q", f, data)
		}
	}
}

func TestEscapeReadHermesHomeInsideWorkspace(t *testing.T) {
	// A workspace holding HERMES_HOME is refused: the box could rename
	// HERMES_HOME's parent on the host and find it uncovered next time.
	needBoxes(t)
	ws := t.TempDir()
	home := filepath.Join(ws, "sub", ".hermes")
	os.MkdirAll(home, 0o700)
	os.WriteFile(filepath.Join(home, ".env"), []byte("KEY=host-only-marker\n"), 0o600)
	for _, tc := range []struct{ home, cwd, want string }{
		{home, ws, "contains HERMES_HOME"},
		{ws, filepath.Join(ws, "sub"), "inside HERMES_HOME"},
	} {
		opts := Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(tc.cwd), Home: tc.home}
		m, err := NewManager(opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Open(context.Background(), "test-task")
		m.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "terminal.cwd") {
			t.Fatalf("workspace %s with HERMES_HOME %s: got %v, want an error saying %q and the fix", tc.cwd, tc.home, err, tc.want)
		}
	}
}

// TestEscapeHermesHomeDirectlyInWorkspace: hermes run from ~ with the
// default ~/.hermes. The box starts, HERMES_HOME is unreadable inside it and,
// being a mount point there, cannot be renamed out from under its cover.
func TestEscapeHermesHomeDirectlyInWorkspace(t *testing.T) {
	needBoxes(t)
	ws := t.TempDir()
	home := filepath.Join(ws, ".hermes")
	os.MkdirAll(home, 0o700)
	os.WriteFile(filepath.Join(home, ".env"), []byte("KEY=host-only-marker\n"), 0o600)
	m, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(ws), Home: home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	env, err := m.Open(context.Background(), "test-task")
	if err != nil {
		t.Fatalf("a workspace with HERMES_HOME as a direct child should start: %v", err)
	}
	res, err := env.Exec(context.Background(), backend.ExecRequest{Command: "cat .hermes/.env; ls -a .hermes; mv .hermes moved && echo MOVED"})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	if strings.Contains(out, "host-only-marker") || strings.Contains(out, "MOVED") {
		t.Fatalf("HERMES_HOME was reachable or movable from the box:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(home, ".env")); err != nil {
		t.Fatalf("HERMES_HOME changed on the host: %v", err)
	}
}

func TestEscapeWriteOutsideWorkspace(t *testing.T) {
	e := startTestBox(t, nil)
	name := fmt.Sprintf("hermes-escape-%d", time.Now().UnixNano())
	targets := []string{"/etc/" + name, "/root/" + name, "/usr/local/" + name}
	var cmd strings.Builder
	for _, p := range targets {
		fmt.Fprintf(&cmd, "echo escaped > %s; ", p)
		t.Cleanup(func() { os.Remove(p) })
	}
	cmd.WriteString("cat /etc/" + name)
	res := e.run(t, cmd.String())
	if !strings.Contains(string(res.Output), "escaped") {
		t.Fatalf("writes inside the box's own root should work: %s", res.Output)
	}
	if err := e.env.WriteFile(context.Background(), "/opt/"+name, []byte("escaped"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove("/opt/" + name) })
	for _, p := range append(targets, "/opt/"+name) {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("a write inside the box appeared on the host at %s", p)
		}
	}
}

func TestEscapeReachHostLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	e := startTestBox(t, nil)
	res := e.run(t, fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d && echo CONNECTED", port))
	if strings.Contains(string(res.Output), "CONNECTED") || res.ExitCode == 0 {
		t.Fatalf("box reached the host loopback listener: %s", res.Output)
	}
	select {
	case <-accepted:
		t.Fatal("host listener accepted a connection from the box")
	default:
	}
}

func TestEscapeSeeProviderKey(t *testing.T) {
	const key = "sk-ant-provider-key-marker-1234567890"
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("OPENAI_API_KEY", key)
	e := startTestBox(t, nil)
	res := e.run(t, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
	if strings.Contains(string(res.Output), key) {
		t.Fatalf("provider key visible inside the box")
	}
	if !strings.Contains(string(res.Output), "HERMES_SESSION_ID=test-task") {
		t.Fatalf("box environment misses HERMES_SESSION_ID: %s", res.Output)
	}
}

func TestEscapeForkBomb(t *testing.T) {
	e := startTestBox(t, func(o *Options) {
		o.Terminal.BoxPids = 64
		persistent := true // the state dir, and the init's log in it, outlive a box that died
		o.Terminal.ContainerPersistent = &persistent
	})
	ctx := context.Background()
	p, err := e.env.Start(ctx, backend.ExecRequest{Command: "mkfifo /tmp/fifo; head -c 4000000 /dev/zero > /tmp/big; bomb() { bomb | bomb & }; bomb; sleep 30", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := e.m.Box(ctx, "test-task")
	// While the bomb holds every task slot of the box, the host keeps
	// using it: file operations and commands at once, each a blocking
	// system call of the init that may need another of its threads
	// (initSpareThreads). They may fail (no slot to fork in); the init
	// must not (a Go runtime that cannot make a thread aborts). The
	// attacker trial of 2026-12-06 killed it with 12 reads of a FIFO or
	// 40 of a 20 MB file: a FIFO is refused now, and file operations run
	// at most maxFileOps at once. (Files of 4 MB here: the box's 256 MiB
	// holds its tmpfs, the bomb and what the init sends.)
	waitfor.Until(t, "the fork bomb to fill the box's pids limit", func() bool {
		st, _ := b.Stats()
		return st.PIDs >= 60
	})
	var busy sync.WaitGroup
	for i := range 40 {
		busy.Go(func() {
			if _, err := e.env.ReadFile(ctx, "/tmp/fifo"); err == nil {
				t.Error("a FIFO was read")
			}
			e.env.ReadFile(ctx, "/tmp/big")
			path := fmt.Sprintf("/tmp/during-bomb-%d", i)
			e.env.WriteFile(ctx, path, bytes.Repeat([]byte("x"), 64<<10), 0o644)
			e.env.Exec(ctx, backend.ExecRequest{Command: "true", Timeout: time.Second})
		})
	}
	busy.Wait()
	res, err := p.Wait(ctx)
	if err != nil {
		initLog, _ := os.ReadFile(filepath.Join(e.m.StateDir("test-task"), "init.log"))
		t.Fatalf("%v; the init's log:\n%s", err, initLog)
	}
	if !res.TimedOut {
		t.Fatalf("fork bomb should run into its timeout: exit %d, signal %q, %.200q", res.ExitCode, res.Signal, res.Output)
	}
	st, _ := b.Stats()
	if st.PIDs > 64 {
		t.Fatalf("box has %d tasks, limit 64", st.PIDs)
	}
	// the host can still start processes, and the box recovers once the tree is gone
	if out, err := runHost(t, "/bin/true"); err != nil {
		t.Fatalf("host cannot fork after the box's fork bomb: %v %s", err, out)
	}
	if r := e.run(t, "echo alive"); trimmed(r) != "alive" {
		t.Fatalf("box did not recover: %s", r.Output)
	}
}

func TestEscapeMemoryHog(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.Terminal.ContainerMemory = 64 })
	res := e.run(t, "head -c 512m /dev/zero | tail > /dev/null; echo done")
	if !res.OOMKilled {
		t.Fatalf("memory hog not reported as OOM: exit %d signal %q output %s", res.ExitCode, res.Signal, res.Output)
	}
	if r := e.run(t, "echo alive"); trimmed(r) != "alive" {
		t.Fatalf("box did not survive the OOM kill: %s", r.Output)
	}
}

func TestEscapeKillAll(t *testing.T) {
	host, err := startHostSleeper(t)
	if err != nil {
		t.Fatal(err)
	}
	e := startTestBox(t, nil)
	e.run(t, "kill -9 -1; echo after")
	if err := host.Signal(syscallZero); err != nil {
		t.Fatalf("host process died from the box's kill -9 -1: %v", err)
	}
	if r := e.run(t, "echo alive"); trimmed(r) != "alive" {
		t.Fatalf("box init did not survive kill -9 -1: %s", r.Output)
	}
}

func TestEscapePtrace(t *testing.T) {
	host, err := startHostSleeper(t)
	if err != nil {
		t.Fatal(err)
	}
	e := startTestBox(t, nil)
	// PTRACE_ATTACH (16) via ptrace(2) = syscall 101 on x86_64: first a
	// host pid (not even visible), then a sibling inside the box.
	script := fmt.Sprintf(`sleep 30 & p=$!; perl -e 'for $pid (%d, $ARGV[0]) { $r = syscall(101, 16, $pid, 0, 0); print "pid $pid: ", ($r == -1 ? "denied $!" : "ATTACHED"), "\n" }' $p; kill $p`, host.Pid)
	res := e.run(t, script)
	if strings.Contains(string(res.Output), "ATTACHED") || !strings.Contains(string(res.Output), "denied") {
		t.Fatalf("ptrace not denied: %s", res.Output)
	}
}

func TestEscapeMount(t *testing.T) {
	e := startTestBox(t, nil)
	res := e.run(t, "mount -t tmpfs none /mnt && echo MOUNTED; unshare -m true && echo UNSHARED; unshare -U -r true && echo USERNS")
	for _, bad := range []string{"MOUNTED", "UNSHARED", "USERNS"} {
		if strings.Contains(string(res.Output), bad) {
			t.Fatalf("box could %s: %s", bad, res.Output)
		}
	}
}

func TestEscapeSethostname(t *testing.T) {
	before, _ := os.Hostname()
	e := startTestBox(t, nil)
	res := e.run(t, "hostname evil-box; hostname")
	after, _ := os.Hostname()
	if after != before {
		t.Fatalf("host name changed from %q to %q", before, after)
	}
	if strings.Contains(string(res.Output), "evil-box") {
		t.Fatalf("box could change its own host name: %s", res.Output)
	}
}

func TestEscapeProcessSurvivesClose(t *testing.T) {
	e := startTestBox(t, nil)
	marker := strconv.Itoa(900000 + time.Now().Nanosecond()%99999)
	e.run(t, fmt.Sprintf("setsid sleep %s >/dev/null 2>&1 < /dev/null & nohup sleep %s >/dev/null 2>&1 &", marker, marker))
	// The command itself is not on a command line (boxCommandVar): wait
	// for the sleepers to exec.
	for i := 0; i < 250 && len(hostProcessesWith(marker)) < 2; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if len(hostProcessesWith(marker)) == 0 {
		t.Fatal("background sleeper did not start")
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := hostProcessesWith(marker); len(pids) > 0 {
		t.Fatalf("processes %v survived the box's Close", pids)
	}
}
