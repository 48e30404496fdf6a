package box

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/backend"

	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/testio"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// attachClientArg makes the test binary an attaching client (TestMain):
// attach-client HOME TASK ARGV... runs ARGV in the running box of TASK
// with this process's stdin, stdout and stderr, passes SIGINT and SIGTERM
// on, and exits with the command's status (128+N for signal N; 200 when
// the attach fails).
const attachClientArg = "attach-client"

func attachClientMain(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: attach-client HOME TASK ARGV...")
		return 2
	}
	ctx := context.Background()
	b, err := Attach(ctx, args[0], args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "attach:", err)
		return 200
	}
	defer b.Close()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	p, err := b.Command(ctx, Command{Argv: args[2:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "command:", err)
		return 201
	}
	go func() {
		for s := range sigs {
			p.Signal(s.(syscall.Signal))
		}
	}()
	res, err := p.Wait(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wait:", err)
		return 202
	}
	if res.ExitCode < 0 {
		return 128 + int(unix.SignalNum(res.Signal))
	}
	return res.ExitCode
}

// attachClient returns the command running this test binary as an
// attaching client of the test box e.
func (e *testBoxEnv) attachClient(argv ...string) *exec.Cmd {
	exe, _ := os.Executable()
	return exec.Command(exe, append([]string{attachClientArg, e.home, "test-task"}, argv...)...)
}

func TestAttachFromAnotherProcess(t *testing.T) {
	e := startTestBox(t, nil)
	var out, errb bytes.Buffer
	c := e.attachClient("sh", "-c", `read line; echo "got $line"; hostname; echo "$HERMES_SESSION_ID $(pwd)"; echo to-stderr >&2; cat /proc/self/cgroup; exit 3`)
	c.Stdin, c.Stdout, c.Stderr = strings.NewReader("hello\n"), &out, &errb
	err := c.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("client: %v (want exit 3); stderr: %s", err, errb.String())
	}
	if !strings.Contains(out.String(), "got hello\n"+Hostname+"\ntest-task "+e.workspace+"\n") {
		t.Errorf("stdout %q: want the stdin line echoed, the box's host name, its environment and workspace", out.String())
	}
	if strings.TrimSpace(errb.String()) != "to-stderr" {
		t.Errorf("stderr %q, want to-stderr on its own stream", errb.String())
	}
	b, err := e.m.Box(context.Background(), "test-task")
	if err != nil {
		t.Fatal(err)
	}
	if name := b.cg.Name(); !strings.Contains(out.String(), name) {
		t.Errorf("the attached command is not in the box's cgroup %s:\n%s", name, out.String())
	}
	// No shell: the command is looked up in the box's PATH.
	err = e.attachClient("no-such-command-xyz").Run()
	if !errors.As(err, &ee) || ee.ExitCode() != 201 {
		t.Errorf("unknown command: %v, want a start error", err)
	}
}

func TestAttachForwardsSignal(t *testing.T) {
	e := startTestBox(t, nil)
	c := e.attachClient("sh", "-c", `trap 'echo got-int; exit 7' INT; echo ready; sleep 30 & wait`)
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		c.Process.Kill()
		t.Fatalf("first line %q %v; stderr %s", line, err, errb.String())
	}
	c.Process.Signal(syscall.SIGINT)
	rest, _ := io.ReadAll(r)
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 || !strings.Contains(string(rest), "got-int") {
		t.Fatalf("client after SIGINT: %v, output %q, stderr %s; want the trap's exit 7", err, rest, errb.String())
	}
}

func TestAttachedClientEndKillsItsCommands(t *testing.T) {
	e := startTestBox(t, nil)
	c := e.attachClient("sh", "-c", `echo $$; exec sleep 1000`)
	stdout, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		c.Process.Kill()
		t.Fatal(err)
	}
	pid := strings.TrimSpace(line)
	c.Process.Kill()
	c.Wait()
	for {
		if res := e.run(t, "kill -0 "+pid+" 2>/dev/null"); res.ExitCode != 0 {
			break
		}
		if time.Now().After(waitfor.Deadline(t)) {
			t.Fatalf("pid %s in the box outlived the attached process that started it", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res := e.run(t, "echo alive"); trimmed(res) != "alive" {
		t.Fatalf("the box should keep running: %q", res.Output)
	}
}

func TestAttachConcurrent(t *testing.T) {
	e := startTestBox(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Add(2)
		go func() { // another process
			defer wg.Done()
			out, err := e.attachClient("sh", "-c", `sleep 0.2; echo p$1`, "sh", strconv.Itoa(i)).Output()
			if err != nil || string(out) != fmt.Sprintf("p%d\n", i) {
				errs <- fmt.Errorf("process %d: %q %v", i, out, err)
			}
		}()
		go func() { // this process, a connection each
			defer wg.Done()
			b, err := Attach(context.Background(), e.home, "test-task")
			if err != nil {
				errs <- err
				return
			}
			defer b.Close()
			res, err := b.Exec(context.Background(), backendReq(fmt.Sprintf("sleep 0.2; echo g%d", i)))
			if err != nil || trimmed(res) != fmt.Sprintf("g%d", i) {
				errs <- fmt.Errorf("goroutine %d: %q %v", i, res.Output, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestAttachOwnerStopEndsAttachedCommand(t *testing.T) {
	e := startTestBox(t, nil)
	b, err := Attach(context.Background(), e.home, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := b.Start(context.Background(), backendReq("sleep 1000"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.m.Stop("test-task"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	if _, err := p.Wait(ctx); !errors.Is(err, ErrBoxStopped) {
		t.Fatalf("attached command after the owner stopped the box: %v, want ErrBoxStopped", err)
	}
	if _, err := os.Stat(AttachSocketPath(e.home, "test-task")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("attach socket left after the box stopped: %v", err)
	}
	if _, err := Attach(context.Background(), e.home, "test-task"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("attach to a stopped box: %v, want ErrNotRunning", err)
	}
}

func TestManagerAttachesToBoxOfAnotherManager(t *testing.T) {
	e := startTestBox(t, nil)
	m2, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(e.workspace), Home: e.home})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	env, err := m2.Open(context.Background(), "test-task")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.WriteFile(context.Background(), "/tmp/from-m2", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := e.run(t, "cat /tmp/from-m2; echo; pwd"); trimmed(res) != "x\n"+e.workspace {
		t.Fatalf("the second manager should reach the first one's box (its files and workspace): %q", res.Output)
	}
	// Port forwarding through the attach socket.
	srv, err := e.env.Start(context.Background(), backend.ExecRequest{Command: `perl -MIO::Socket::INET -e '$s=IO::Socket::INET->new(LocalAddr=>"127.0.0.1:7071",Listen=>1,ReuseAddr=>1) or die; print "up\n"; $|=1; $c=$s->accept; print $c "hi from box\n"; close $c'`})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Kill()
	b2, _ := m2.Box(context.Background(), "test-task")
	if !b2.Attached() {
		t.Fatal("the second manager started a box of its own")
	}
	var conn net.Conn
	waitfor.Poll(t, func() bool {
		conn, err = b2.DialBox(context.Background(), 7071)
		return err == nil
	})
	if err != nil {
		t.Fatalf("dial the box's port through the attach socket: %v", err)
	}
	got, _ := io.ReadAll(conn)
	conn.Close()
	if string(got) != "hi from box\n" {
		t.Fatalf("read %q from the box's server", got)
	}
}

func TestAttachStaleSocketIsRemoved(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "boxes", "stale")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := AttachSocketPath(home, "stale")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // as an init that died leaves it
	if _, err := Attach(context.Background(), home, "stale"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("attach to a stale socket: %v, want ErrNotRunning", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale socket not removed: %v", err)
	}
}

func TestAttachStaleSocketKeptWhileLocked(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "boxes", "booting")
	os.MkdirAll(dir, 0o700)
	lock, err := lockState(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	path := AttachSocketPath(home, "booting")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Attach(context.Background(), home, "booting"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("attach: %v, want ErrNotRunning", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the socket of a box whose lock is held must be left to its owner: %v", err)
	}
}

// TestAttachRefusesOtherUID runs the client as nobody: the state dir's
// permissions stop it, and with them opened up, the init's SO_PEERCRED
// check does.
func TestAttachRefusesOtherUID(t *testing.T) {
	e := startTestBox(t, nil)
	exe, _ := os.Executable()
	bin := filepath.Join(t.TempDir(), "client")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(bin); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	asNobody := func() (string, int) {
		c := exec.Command(bin, attachClientArg, e.home, "test-task", "true")
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		c.Dir = "/"
		out, err := c.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return string(out), 0
		}
		return string(out), ee.ExitCode()
	}
	if out, code := asNobody(); code != 200 || !strings.Contains(out, "permission denied") {
		t.Fatalf("nobody attaching: exit %d %q, want refused by the 0700 state dir", code, out)
	}
	sock := AttachSocketPath(e.home, "test-task")
	for d := filepath.Dir(sock); d != filepath.Dir(e.home); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	os.Chmod(sock, 0o666)
	if out, code := asNobody(); code != 200 || !strings.Contains(out, "not the box owner") {
		t.Fatalf("nobody attaching through an opened-up socket: exit %d %q, want refused by the init's peer check", code, out)
	}
	if res := e.run(t, "echo still"); trimmed(res) != "still" {
		t.Fatalf("box after refused peers: %q", res.Output)
	}
}

func TestCommandOnTerminal(t *testing.T) {
	e := startTestBox(t, nil)
	b, err := e.m.Box(context.Background(), "test-task")
	if err != nil {
		t.Fatal(err)
	}
	var out testio.Buffer
	pr, pw := io.Pipe()
	defer pw.Close()
	p, err := b.Command(context.Background(), Command{Argv: []string{"sh", "-c", `tty; stty size; trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done`},
		Stdin: pr, Stdout: &out, TTY: true, Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "ready") {
		if time.Now().After(waitfor.Deadline(t)) {
			p.Kill()
			t.Fatalf("no ready line: %q", out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "/dev/pts/") || !strings.Contains(out.String(), "30 100") {
		t.Errorf("terminal output %q: want a /dev/pts terminal of 30 rows and 100 columns", out.String())
	}
	p.Resize(40, 120)
	for !strings.Contains(out.String(), "40 120") {
		if time.Now().After(waitfor.Deadline(t)) {
			p.Kill()
			t.Fatalf("no SIGWINCH and new size after Resize: %q", out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	pw.Write([]byte{3}) // ^C, typed on the terminal
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	res, err := p.Wait(ctx)
	if err != nil || res.Signal != "SIGINT" {
		t.Fatalf("after ^C: %+v %v, want the job killed by SIGINT", res, err)
	}
}

// The attach socket is listed in the box's network namespace
// (/proc/net/unix): under a name that does not give HERMES_HOME away, and
// out of reach of the box's processes.
func TestAttachSocketHiddenFromBox(t *testing.T) {
	e := startTestBox(t, nil)
	sock := AttachSocketPath(e.home, "test-task")
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("no attach socket on the host: %v", err)
	}
	res := e.run(t, "cat /proc/net/unix; test -e "+sock+" && echo VISIBLE; test -e "+filepath.Dir(sock)+" && echo VISIBLE; true")
	out := string(res.Output)
	if strings.Contains(out, e.home) || strings.Contains(out, "VISIBLE") || !strings.Contains(out, wire.AttachSocketName) {
		t.Fatalf("the box sees the attach socket's host path or the state dir:\n%s", out)
	}
}
