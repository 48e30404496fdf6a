package box

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"

	"github.com/hermes-go/hermes/internal/box/wire"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// bigStdin is more stdin than the init could ever queue (the old init
// dropped frames past 256 of 32 KiB, the close frame included, and the
// command then waited for EOF forever), with its sha256 in hex.
func bigStdin() ([]byte, string) {
	data := make([]byte, 21<<20+123)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:])
}

// lateReader reads its stdin only after a while, so that everything sent
// before then waits in the box's init; it prints the byte count and hash.
const lateReader = `sleep 2; tee /tmp/stdin.bin | sha256sum | cut -d' ' -f1; wc -c < /tmp/stdin.bin; rm /tmp/stdin.bin`

func TestStdinReachesLateReaderWhole(t *testing.T) {
	e := startTestBox(t, nil)
	data, sum := bigStdin()
	want := sum + "\n" + strconv.Itoa(len(data))
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()

	res, err := e.env.Exec(ctx, backend.ExecRequest{Command: lateReader, Stdin: bytes.NewReader(data), Timeout: time.Minute})
	if err != nil || res.TimedOut || trimmed(res) != want {
		t.Fatalf("Exec with stdin: %v, timed out %v, output %q; want %q", err, res.TimedOut, trimmed(res), want)
	}

	// A background process fed with Write, then CloseStdin.
	p, err := e.env.Start(ctx, backend.ExecRequest{Command: lateReader, Timeout: time.Minute})
	must(t, err)
	for rest := data; len(rest) > 0; rest = rest[min(len(rest), 1<<20):] {
		if _, err := p.Write(rest[:min(len(rest), 1<<20)]); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	must(t, p.CloseStdin())
	res, err = p.Wait(ctx)
	if err != nil || res.TimedOut || trimmed(res) != want {
		t.Fatalf("Start, Write, CloseStdin: %v, timed out %v, output %q; want %q", err, res.TimedOut, trimmed(res), want)
	}

	// An attached process's command.
	var out, errb bytes.Buffer
	c := e.attachClient("sh", "-c", lateReader)
	c.Stdin, c.Stdout, c.Stderr = bytes.NewReader(data), &out, &errb
	if err := c.Run(); err != nil || strings.TrimSpace(out.String()) != want {
		t.Fatalf("attached: %v, output %q, stderr %s; want %q", err, out.String(), errb.String(), want)
	}
}

// A command that never reads its stdin holds up only its own sender: the
// box's other commands and file operations go on.
func TestStdinOfStalledCommandDoesNotBlockOthers(t *testing.T) {
	e := startTestBox(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := e.env.Start(ctx, backend.ExecRequest{Command: "sleep 1000"})
	must(t, err)
	defer p.Kill()
	wrote := make(chan error, 1)
	go func() {
		_, err := p.Write(make([]byte, 16<<20))
		wrote <- err
	}()
	for range 3 {
		if res := e.run(t, "echo still-here"); trimmed(res) != "still-here" {
			t.Fatalf("other command: %q", trimmed(res))
		}
	}
	if _, err := e.env.ReadFile(ctx, "/etc/hostname"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-wrote:
		t.Fatalf("16 MiB written to a command that does not read: %v; want the writer held back", err)
	default:
	}
	must(t, p.Kill())
	if err := <-wrote; err == nil {
		t.Error("Write to a killed command succeeded")
	}
}

// Every command starts with an empty capability bounding set, the
// attached ones too (they were forked from another thread of the init,
// whose bounding set was the full one).
func TestAttachedCommandHasEmptyBoundingSet(t *testing.T) {
	e := startTestBox(t, nil)
	const want = "CapBnd:\t0000000000000000"
	if got := trimmed(e.run(t, "grep CapBnd /proc/self/status")); got != want {
		t.Errorf("owner's command: %q, want %q", got, want)
	}
	for range 3 { // whichever thread serves the connection
		out, err := e.attachClient("grep", "CapBnd", "/proc/self/status").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Fatalf("attached command: %v %q, want %q", err, out, want)
		}
	}
}

// Regression: a process whose workspace is another directory attached to
// the box and ran its commands in the box's workspace (rm in projB
// deleted projA's files). It is refused, with both paths named.
func TestAttachRefusesOtherWorkspace(t *testing.T) {
	e := startTestBox(t, nil)
	other := t.TempDir()
	m2, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(other), Home: e.home})
	must(t, err)
	defer m2.Close()
	_, err = m2.Box(context.Background(), "test-task")
	if err == nil || !strings.Contains(err.Error(), e.workspace) || !strings.Contains(err.Error(), other) {
		t.Fatalf("attach from workspace %s to the box of %s: %v; want a refusal naming both", other, e.workspace, err)
	}
	if res := e.run(t, "pwd"); trimmed(res) != e.workspace {
		t.Fatalf("the owner's box after the refusal: %q", trimmed(res))
	}
}

// Regression: attached commands died with the box when its owner stopped
// it (hermes box exec ending while another box exec ran in its box), and
// when the owner's idle timer fired (attached use did not count).
func TestOwnerWaitsForAttachedCommands(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.Terminal.LifetimeSeconds = 1 })
	c := e.attachClient("sh", "-c", "echo started; sleep 3; echo done")
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	must(t, c.Start())
	for !strings.Contains(out.String(), "started") {
		if time.Now().After(waitfor.Deadline(t)) {
			c.Process.Kill()
			t.Fatalf("attached command did not start: %q", errb.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	// Idle for the owner longer than its lifetime: only the attached
	// command uses the box.
	time.Sleep(2 * time.Second)
	b, err := e.m.Box(context.Background(), "test-task")
	must(t, err)
	var waited []int
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, b.WaitAttached(ctx, func(n int) { waited = append(waited, n) }))
	if len(waited) != 1 || waited[0] != 1 {
		t.Errorf("WaitAttached reported %v, want one attached command", waited)
	}
	// No new attached command once the owner is stopping.
	msg, err := e.attachClient("true").CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "stopping") {
		t.Errorf("attach while the owner stops the box: %v %q, want a refusal", err, msg)
	}
	must(t, e.m.Stop("test-task"))
	if err := c.Wait(); err != nil || !strings.Contains(out.String(), "done") {
		t.Fatalf("attached command: %v, out %q, stderr %q; want it to run to its end", err, out.String(), errb.String())
	}
}

// rawAttach opens an attached connection to the box of e and says hello.
func rawAttach(t *testing.T, e *testBoxEnv) (*net.UnixConn, *wire.Conn, wire.Response) {
	t.Helper()
	c, err := dialAttachSocket(AttachSocketPath(e.home, "test-task"))
	must(t, err)
	fc := wire.NewConn(c)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var r wire.Response
	if err := fc.Send(wire.Request{Op: wire.OpAttach, Version: wire.Version}); err == nil {
		fc.Receive(&r)
	}
	c.SetDeadline(time.Time{})
	return c, fc, r
}

// Regression: connections that said hello and then idled held every slot
// of the attach socket forever, and the next attach failed with
// "connection reset by peer". Idle ones are now closed, and one too many
// is told why.
func TestAttachSocketFullAndIdle(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.AttachIdleTimeout = 2 * time.Second })
	var conns []*net.UnixConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range wire.MaxAttached {
		c, _, r := rawAttach(t, e)
		conns = append(conns, c)
		if r.Kind != wire.KindReady {
			t.Fatalf("attach %d: %q %s", len(conns), r.Kind, r.Err)
		}
	}
	_, err := Attach(context.Background(), e.home, "test-task")
	if err == nil || !strings.Contains(err.Error(), "64 attached connections") {
		t.Fatalf("attach to a full socket: %v; want it to say the box has 64 attached connections", err)
	}
	// The idle connections are closed by the init.
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("idle attached connection: %v, want it closed by the box", err)
		}
	}
	b, err := Attach(context.Background(), e.home, "test-task")
	must(t, err)
	defer b.Close()
	// One with a command running is kept past the idle timeout.
	p, err := b.Start(context.Background(), backend.ExecRequest{Command: "sleep 3; echo done"})
	must(t, err)
	res, err := p.Wait(context.Background())
	if err != nil || trimmed(res) != "done" {
		t.Fatalf("attached command outliving the idle timeout: %v %q", err, trimmed(res))
	}
}

// Frames on an attached connection are at most wire.MaxAttachFrame (2 MiB, it
// was 64); a WriteFile of more goes in parts and arrives whole.
func TestAttachFrameCapAndBigWriteFile(t *testing.T) {
	e := startTestBox(t, nil)
	c, fc, r := rawAttach(t, e)
	defer c.Close()
	if r.Kind != wire.KindReady {
		t.Fatalf("hello: %q %s", r.Kind, r.Err)
	}
	fc.Send(wire.Request{ID: 1, Op: wire.OpWriteFile, Path: "/tmp/big", Data: make([]byte, 3<<20)})
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := fc.Receive(&r); err == nil {
		t.Fatalf("a 3 MiB frame was answered (%q %s); want the connection closed", r.Kind, r.Err)
	}

	data, sum := bigStdin()
	b, err := Attach(context.Background(), e.home, "test-task")
	must(t, err)
	defer b.Close()
	ctx := context.Background()
	must(t, b.WriteFile(ctx, "/tmp/big", data[:5<<20+7], 0o600))
	must(t, b.WriteFile(ctx, "/tmp/big", data, 0o600)) // over a bigger one: whole, not appended
	got, err := e.env.ReadFile(ctx, "/tmp/big")
	must(t, err)
	h := sha256.Sum256(got)
	if hex.EncodeToString(h[:]) != sum {
		t.Fatalf("WriteFile of %d bytes through an attached connection: read back %d bytes, another hash", len(data), len(got))
	}
	if left := trimmed(e.run(t, "ls -a /tmp | grep -c tmp || true")); left != "0" {
		t.Errorf("%s temp files left in /tmp", left)
	}
}

// stallWriter blocks every Write until release is closed, after saying
// (once, on writing) that the first one came.
type stallWriter struct {
	first   chan struct{}
	once    sync.Once
	release chan struct{}
}

func (w *stallWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.first) })
	<-w.release
	return len(p), nil
}

// Regression: an owner that did not read its socket (its command's output
// blocked on a full stdout) froze attached commands: the init reported
// attached use to the owner from the attached connection's request loop,
// which then stopped reading its stdin, signals and kills.
func TestStalledOwnerDoesNotFreezeAttachedCommand(t *testing.T) {
	e := startTestBox(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := e.m.Box(ctx, "test-task")
	must(t, err)
	w := &stallWriter{first: make(chan struct{}), release: make(chan struct{})}
	p, err := b.Command(ctx, Command{Argv: []string{"sh", "-c", "yes | head -c 50000000; sleep 60"}, Stdout: w})
	must(t, err)
	released := false
	release := func() {
		if !released {
			released = true
			close(w.release)
		}
	}
	defer func() { release(); p.Kill() }()
	<-w.first
	time.Sleep(500 * time.Millisecond) // the init's sends fill the owner's socket
	// The owner starts another command meanwhile: the init forks it, and
	// its answer waits for the owner's socket too.
	go func() {
		if p2, err := b.Command(ctx, Command{Argv: []string{"true"}}); err == nil {
			p2.Wait(ctx)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	var out, errb bytes.Buffer
	c := e.attachClient("cat")
	c.Stdin, c.Stdout, c.Stderr = strings.NewReader("hello\n"), &out, &errb
	must(t, c.Start())
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Until(waitfor.Deadline(t))):
		c.Process.Kill()
		<-done
		release()
		t.Fatalf("attached cat did not end while the owner's reader was stalled: out %q, stderr %q", out.String(), errb.String())
	}
	if err != nil || out.String() != "hello\n" {
		t.Fatalf("attached cat: %v, out %q, stderr %q; want hello", err, out.String(), errb.String())
	}
}
