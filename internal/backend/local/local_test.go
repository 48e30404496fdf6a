package local

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"

	"github.com/hermes-go/hermes/internal/waitfor"
)

func newEnv(t *testing.T, environ []string, passthrough ...string) (*Backend, *Environment) {
	t.Helper()
	dir := t.TempDir()
	b, err := New(dir, passthrough, func() []string { return environ })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e, err := b.Open(context.Background(), "sess-1")
	if err != nil {
		t.Fatal(err)
	}
	return b, e.(*Environment)
}

func hostEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, extra...)
}

func TestNewRejectsMissingCwd(t *testing.T) {
	_, err := New(filepath.Join(t.TempDir(), "nope"), nil, os.Environ)
	if err == nil || !strings.Contains(err.Error(), "terminal.cwd") {
		t.Fatalf("want an error naming terminal.cwd, got %v", err)
	}
}

func TestOpenCachesPerTask(t *testing.T) {
	b, e := newEnv(t, hostEnv())
	again, _ := b.Open(context.Background(), "sess-1")
	other, _ := b.Open(context.Background(), "sess-2")
	if again != backend.Environment(e) || other == backend.Environment(e) {
		t.Fatal("Open must return one environment per task id")
	}
	if b.Kind() != "local" || e.Workdir() != b.Workdir() {
		t.Fatal("kind or workdir wrong")
	}
}

func TestExecExitCodeOutputOrderAndWorkdir(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	res, err := e.Exec(context.Background(), backend.ExecRequest{Command: "echo out; echo err >&2; echo out2; pwd; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	want := "out\nerr\nout2\n" + e.Workdir() + "\n"
	if res.ExitCode != 3 || string(res.Output) != want {
		t.Fatalf("got exit %d output %q, want 3 %q", res.ExitCode, res.Output, want)
	}
	sub := filepath.Join(e.Workdir(), "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	res, _ = e.Exec(context.Background(), backend.ExecRequest{Command: "pwd", Workdir: "sub"})
	if strings.TrimSpace(string(res.Output)) != sub {
		t.Fatalf("relative workdir: got %q", res.Output)
	}
	if _, err := e.Exec(context.Background(), backend.ExecRequest{Command: "pwd", Workdir: "missing"}); err == nil {
		t.Fatal("a missing workdir must be an error")
	}
}

func TestExecStdinAndEnv(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	res, _ := e.Exec(context.Background(), backend.ExecRequest{
		Command: `tr a-z A-Z; echo "$FOO $HERMES_SESSION_ID"`, Stdin: strings.NewReader("hello\n"), Env: map[string]string{"FOO": "bar"},
	})
	if string(res.Output) != "HELLO\nbar sess-1\n" {
		t.Fatalf("got %q", res.Output)
	}
}

func TestExecSignalReported(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	res, _ := e.Exec(context.Background(), backend.ExecRequest{Command: "kill -SEGV $$"})
	if res.Signal != "SIGSEGV" || res.ExitCode != -1 {
		t.Fatalf("got signal %q exit %d", res.Signal, res.ExitCode)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func TestExecTimeoutKillsGrandchildren(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	pidFile := filepath.Join(e.Workdir(), "grandchild.pid")
	// The grandchild ignores SIGTERM, so only the group SIGKILL ends it.
	cmd := `sh -c 'trap "" TERM; sleep 300 & echo $! > ` + pidFile + `; wait' ; echo never`
	res, err := e.Exec(context.Background(), backend.ExecRequest{Command: cmd, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Signal == "" {
		t.Fatalf("want a timed-out, signalled result, got %+v", res)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := waitfor.Deadline(t)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("grandchild %d survived the timeout", pid)
	}
}

func TestExecContextCancelKillsCommand(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	res, err := e.Exec(ctx, backend.ExecRequest{Command: "sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != "SIGTERM" || res.TimedOut {
		t.Fatalf("got %+v", res)
	}
}

func TestExecReturnsWhenBackgroundedChildHoldsPipe(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	res, err := e.Exec(context.Background(), backend.ExecRequest{Command: "sleep 30 & echo started"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(string(res.Output), "started") {
		t.Fatalf("got %+v", res)
	}
}

func TestExecOutputStreamsToWriter(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	var buf bytes.Buffer
	res, _ := e.Exec(context.Background(), backend.ExecRequest{Command: "seq 1 3", Output: &buf})
	if buf.String() != "1\n2\n3\n" || string(res.Output) != buf.String() {
		t.Fatalf("stream %q result %q", buf.String(), res.Output)
	}
}

func TestEnvScrubbing(t *testing.T) {
	environ := hostEnv(
		"OPENAI_API_KEY=sk-fake-openai-123456", "ANTHROPIC_AUTH_TOKEN=ant-token-abcdef", "GITHUB_TOKEN=ghp_abcdefgh",
		"DB_PASSWORD=hunter22", "MY_SECRET=s3cr3tvalue", "HERMES_HOME=/tmp/hh", "KEEP_ME=yes", "PASS_TOKEN=allowed-through",
	)
	b, e := newEnv(t, environ, "PASS_TOKEN")
	res, _ := e.Exec(context.Background(), backend.ExecRequest{Command: "env"})
	out := string(res.Output)
	for _, banned := range []string{"OPENAI_API_KEY", "sk-fake-openai", "ANTHROPIC_AUTH_TOKEN", "GITHUB_TOKEN", "DB_PASSWORD", "MY_SECRET", "HERMES_HOME"} {
		if strings.Contains(out, banned) {
			t.Errorf("env output leaks %s", banned)
		}
	}
	for _, kept := range []string{"KEEP_ME=yes", "PASS_TOKEN=allowed-through", "HERMES_SESSION_ID=sess-1"} {
		if !strings.Contains(out, kept) {
			t.Errorf("env output lacks %s", kept)
		}
	}
	secrets := strings.Join(b.SecretValues(), ",")
	if !strings.Contains(secrets, "sk-fake-openai-123456") || strings.Contains(secrets, "/tmp/hh") || strings.Contains(secrets, "allowed-through") {
		t.Fatalf("secret values %q", secrets)
	}
}

func TestBackgroundLifecycle(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	p, err := e.Start(context.Background(), backend.ExecRequest{Command: `while read line; do echo "got $line"; done; echo bye; exit 4`})
	if err != nil {
		t.Fatal(err)
	}
	if p.Done() {
		t.Fatal("process done before stdin closed")
	}
	if _, err := p.Write([]byte("one\ntwo\n")); err != nil {
		t.Fatal(err)
	}
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || string(res.Output) != "got one\ngot two\nbye\n" || !p.Done() {
		t.Fatalf("got %+v %q", res, res.Output)
	}
	if _, err := p.Write([]byte("x")); err == nil {
		t.Fatal("write after exit must fail")
	}
}

func TestBackgroundKillAndWaitTimeout(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	p, err := e.Start(context.Background(), backend.ExecRequest{Command: "echo up; sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on a running process: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	res, _ := p.Wait(context.Background())
	if res.Signal != "SIGTERM" || !strings.Contains(string(res.Output), "up") {
		t.Fatalf("got %+v", res)
	}
	if alive(p.PID()) {
		t.Fatal("process alive after Kill")
	}
}

func TestEnvironmentCloseKillsBackground(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	p, err := e.Start(context.Background(), backend.ExecRequest{Command: "sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Close()
	if !p.Done() {
		t.Fatal("Close must end background processes")
	}
}

func TestFiles(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	ctx := context.Background()
	if err := e.WriteFile(ctx, "a/b/c.txt", []byte("hi"), 0); err != nil {
		t.Fatal(err)
	}
	got, err := e.ReadFile(ctx, filepath.Join(e.Workdir(), "a/b/c.txt"))
	if err != nil || string(got) != "hi" {
		t.Fatalf("read back %q %v", got, err)
	}
	abs := filepath.Join(e.Workdir(), "run.sh")
	if err := os.WriteFile(abs, []byte("old"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteFile(ctx, "run.sh", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := e.Stat(ctx, "run.sh")
	if err != nil || st.Mode.Perm() != 0o750 || st.Size != 3 {
		t.Fatalf("mode not kept: %+v %v", st, err)
	}
	if _, err := e.ReadFile(ctx, "missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("want ErrNotExist, got %v", err)
	}
	if _, err := e.Stat(ctx, "missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("want ErrNotExist, got %v", err)
	}
	ents, err := e.ReadDir(ctx, ".")
	if err != nil || len(ents) != 2 || ents[0].Name != "a" || !ents[0].IsDir || ents[1].Name != "run.sh" {
		t.Fatalf("readdir %+v %v", ents, err)
	}
	// No temporary files left behind.
	left, _ := os.ReadDir(e.Workdir())
	if len(left) != 2 {
		t.Fatalf("leftover files: %v", left)
	}
}

func TestWriteFileThroughSymlinkKeepsLink(t *testing.T) {
	_, e := newEnv(t, hostEnv())
	ctx := context.Background()
	real := filepath.Join(e.Workdir(), "real.txt")
	_ = os.WriteFile(real, []byte("x"), 0o644)
	link := filepath.Join(e.Workdir(), "link.txt")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteFile(ctx, "link.txt", []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("symlink replaced by a file")
	}
	if b, _ := os.ReadFile(real); string(b) != "y" {
		t.Fatalf("target has %q", b)
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	c := backend.NewCapture(4, 6)
	for _, s := range []string{"abcd", "efgh", "ij", "klmnop", "qr"} {
		_, _ = c.Write([]byte(s))
	}
	got := string(c.Bytes())
	if !strings.HasPrefix(got, "abcd") || !strings.HasSuffix(got, "mnopqr") || !strings.Contains(got, "8 bytes") {
		t.Fatalf("got %q", got)
	}
	if c.Total() != 18 {
		t.Fatalf("total %d", c.Total())
	}
}

// Regression (issue 8 "Secrets"): FAL_KEY, MODAL_TOKEN_ID and
// AWS_ACCESS_KEY_ID were secret for config but passed to commands and not
// redacted; the backend now asks the same rule as config.
func TestScrubEnvSharesTheSecretRule(t *testing.T) {
	kept, values := ScrubEnv([]string{"FAL_KEY=fal-0123456789", "MODAL_TOKEN_ID=ak-0123456789", "AWS_ACCESS_KEY_ID=AKIA0123456789", "PATH=/bin"}, nil)
	if strings.Join(kept, ",") != "PATH=/bin" {
		t.Fatalf("kept %v", kept)
	}
	if len(values) != 3 {
		t.Fatalf("secret values %v", values)
	}
}
