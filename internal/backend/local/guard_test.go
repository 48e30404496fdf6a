package local

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// guardFixture is a fake user: HOME with a HERMES_HOME inside, a project
// (the workspace) and a victim directory, under one temp dir.
type guardFixture struct {
	root, home, hermesHome, work, victim, tmp string
	env                                       *Environment
	backend                                   *Backend
}

const fakeKey = "sk-guard-test-0123456789abcdef"

func needLandlock(t *testing.T) {
	t.Helper()
	if landlockABI() < 1 {
		t.Skip("the kernel has no Landlock (needs >= 5.13 with lsm=landlock)")
	}
}

func newGuardFixture(t *testing.T, mode Sandbox, writable ...string) *guardFixture {
	t.Helper()
	root := t.TempDir()
	f := &guardFixture{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "home", "project"),
		victim: filepath.Join(root, "home", "victim"), tmp: filepath.Join(root, "tmp")}
	f.hermesHome = filepath.Join(f.home, ".hermes")
	for _, d := range []string{f.work, f.victim, f.tmp, filepath.Join(f.hermesHome, "secrets"), filepath.Join(f.hermesHome, "skills")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(f.hermesHome, "config.yaml"):    "approvals:\n  mode: manual\n",
		filepath.Join(f.hermesHome, ".env"):           "OPENAI_API_KEY=" + fakeKey + "\n",
		filepath.Join(f.hermesHome, "state.db"):       "db",
		filepath.Join(f.hermesHome, "secrets", "gh"):  fakeKey,
		filepath.Join(f.hermesHome, "skills", "a.md"): "skill",
		filepath.Join(f.victim, "precious.txt"):       "keep me",
		filepath.Join(f.home, ".bashrc"):              "# rc",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home, "TMPDIR=" + f.tmp, "HERMES_HOME=" + f.hermesHome}
	b, err := NewWithOptions(Options{Cwd: f.work, Environ: func() []string { return env }, Sandbox: mode,
		WritablePaths: writable, HermesHome: f.hermesHome, Supervise: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e, err := b.Open(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	f.env, f.backend = e.(*Environment), b
	return f
}

func (f *guardFixture) run(t *testing.T, command string) backend.ExecResult {
	t.Helper()
	res, err := f.env.Exec(context.Background(), backend.ExecRequest{Command: command, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestGuardWorkspaceWriteContainsRmRfHome(t *testing.T) {
	needLandlock(t)
	f := newGuardFixture(t, SandboxWorkspaceWrite)
	res := f.run(t, `rm -rf "$HOME"; echo "rm=$?"; mkdir -p "$PWD" && echo ok > "$PWD/made.txt" && echo t > "$TMPDIR/t.txt" && echo devnull > /dev/null && echo wrote`)
	out := string(res.Output)
	if !strings.Contains(out, "wrote") {
		t.Fatalf("workspace, temp dir and /dev/null must be writable:\n%s", out)
	}
	if !strings.Contains(out, "Permission denied") || strings.Contains(out, "rm=0") {
		t.Fatalf("rm -rf $HOME must fail with EACCES:\n%s", out)
	}
	for _, p := range []string{filepath.Join(f.victim, "precious.txt"), filepath.Join(f.hermesHome, "config.yaml"), filepath.Join(f.hermesHome, ".env"), filepath.Join(f.home, ".bashrc")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s must survive: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "made.txt")); string(b) != "ok\n" {
		t.Errorf("workspace write lost: %q", b)
	}
}

func TestGuardHermesHomeNeitherWritableNorSecretsReadable(t *testing.T) {
	needLandlock(t)
	f := newGuardFixture(t, SandboxWorkspaceWrite)
	before, _ := os.ReadFile(filepath.Join(f.hermesHome, "config.yaml"))
	attacks := []string{
		`echo "approvals: {mode: off}" >> "$HERMES_HOME/config.yaml"`,
		`printf 'approvals:\n  mode: off\n' > "$HERMES_HOME/config.yaml.new" && mv "$HERMES_HOME/config.yaml.new" "$HERMES_HOME/config.yaml"`,
		`mv "$HERMES_HOME" "$HOME/moved"`,
		`echo x > "$HERMES_HOME/SOUL.md"`,
		`rm -f "$HERMES_HOME/.env"`,
		`ln -s /tmp/x "$HERMES_HOME/skills/evil"`,
		`cat "$HERMES_HOME/.env" "$HERMES_HOME/state.db" "$HERMES_HOME/secrets/gh"`,
		`base64 "$HERMES_HOME/.env"; cp "$HERMES_HOME/.env" "$PWD/stolen"; cat "$PWD/stolen"`,
		`cd "$HERMES_HOME" && cat .env ./secrets/gh`,
	}
	for _, a := range attacks {
		res := f.run(t, "HERMES_HOME="+f.hermesHome+"; "+a)
		out := string(res.Output)
		if strings.Contains(out, fakeKey) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte("OPENAI_API_KEY=" + fakeKey))[:20]) {
			t.Errorf("%s: secret leaked:\n%s", a, out)
		}
		if res.ExitCode == 0 {
			t.Errorf("%s: must fail, got exit 0:\n%s", a, out)
		}
	}
	after, _ := os.ReadFile(filepath.Join(f.hermesHome, "config.yaml"))
	if !bytes.Equal(before, after) {
		t.Fatalf("config.yaml changed:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(f.hermesHome, "SOUL.md")); err == nil {
		t.Error("a new file appeared in HERMES_HOME")
	}
	// What stays readable: config.yaml, skills, the rest of HOME.
	res := f.run(t, "HERMES_HOME="+f.hermesHome+`; cat "$HERMES_HOME/config.yaml" "$HERMES_HOME/skills/a.md" "$HOME/.bashrc" >/dev/null && ls "$HERMES_HOME" >/dev/null && echo readable`)
	if !strings.Contains(string(res.Output), "readable") {
		t.Fatalf("config.yaml, skills and HOME must stay readable:\n%s", res.Output)
	}
}

func TestGuardWritablePathsAndReadOnly(t *testing.T) {
	needLandlock(t)
	root := t.TempDir()
	extra := filepath.Join(root, "cache")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newGuardFixture(t, SandboxWorkspaceWrite, extra)
	if res := f.run(t, "echo c > "+extra+"/c && echo fine"); !strings.Contains(string(res.Output), "fine") {
		t.Fatalf("terminal.writable_paths must be writable:\n%s", res.Output)
	}
	ro := newGuardFixture(t, SandboxReadOnly)
	res := ro.run(t, `cat "$HOME/.bashrc" >/dev/null && echo read; echo x > "$PWD/f"; echo "w=$?"`)
	if out := string(res.Output); !strings.Contains(out, "read") || !strings.Contains(out, "w=1") {
		t.Fatalf("read-only: reads work, workspace writes fail:\n%s", out)
	}
}

// TestGuardWorkspaceContainingHermesHome: with the workspace at HOME
// (HERMES_HOME below it), the rest of HOME is writable, HERMES_HOME not.
func TestGuardWorkspaceContainingHermesHome(t *testing.T) {
	needLandlock(t)
	f := newGuardFixture(t, SandboxWorkspaceWrite)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home, "TMPDIR=" + f.tmp}
	b, err := NewWithOptions(Options{Cwd: f.home, Environ: func() []string { return env }, HermesHome: f.hermesHome})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e, _ := b.Open(context.Background(), "s")
	res, _ := e.Exec(context.Background(), backend.ExecRequest{Command: `echo v > victim/new && echo ok; echo x > .hermes/config.yaml; echo "c=$?"; cat .hermes/.env; echo "e=$?"`})
	out := string(res.Output)
	if !strings.Contains(out, "ok") || !strings.Contains(out, "c=1") || !strings.Contains(out, "e=1") || strings.Contains(out, fakeKey) {
		t.Fatalf("workspace HOME: siblings writable, HERMES_HOME not, .env unreadable:\n%s", out)
	}
}

// TestGuardHidesHermesEnviron: a command cannot read the secrets in the
// environment or the memory of hermes (this test binary re-run as a
// helper with a key in its initial environment, calling HideProcess as
// hermes does), in every sandbox mode, also when hermes runs as root.
func TestGuardHidesHermesEnviron(t *testing.T) {
	if mode := os.Getenv("HERMES_TEST_HIDE_MODE"); mode != "" {
		hideHelper(Sandbox(mode))
		return
	}
	for _, mode := range []Sandbox{SandboxWorkspaceWrite, SandboxOff} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGuardHidesHermesEnviron$")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HERMES_TEST_HIDE_MODE=" + string(mode), "FAKE_API_KEY=" + fakeKey, "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: helper: %v\n%s", mode, err, out)
		}
		text := string(out)
		leaked := strings.Contains(text, fakeKey) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(fakeKey))[:12])
		// As root the block is readable but scrubbed; otherwise non-dumpable
		// hermes's environ is not readable at all.
		hidden := strings.Contains(text, "FAKE_API_KEY=***") || strings.Contains(text, "environ: Permission denied")
		if leaked || !hidden || !strings.Contains(text, "mem=1") || !strings.Contains(text, "getenv-ok") {
			t.Fatalf("%s: hermes's secrets are readable, or its own environment broke:\n%s", mode, text)
		}
	}
}

// hideHelper is the helper side: hide, check the Go environment still has
// the key, and let a command try to read it.
func hideHelper(mode Sandbox) {
	if err := HideProcess(); err != nil {
		panic(err)
	}
	if os.Getenv("FAKE_API_KEY") == fakeKey {
		os.Stdout.WriteString("getenv-ok\n")
	}
	dir, _ := os.MkdirTemp("", "hide-")
	defer os.RemoveAll(dir)
	b, err := NewWithOptions(Options{Cwd: dir, Sandbox: mode, Environ: func() []string { return []string{"PATH=" + os.Getenv("PATH")} }})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	e, _ := b.Open(context.Background(), "s")
	res, _ := e.Exec(context.Background(), backend.ExecRequest{Command: `tr '\0' '\n' < /proc/$PPID/environ; base64 /proc/$PPID/environ; head -c 100 /proc/$PPID/mem >/dev/null; echo "mem=$?"`})
	os.Stdout.Write(res.Output)
}

func TestGuardFallsBackWithoutLandlock(t *testing.T) {
	var warn bytes.Buffer
	dir := t.TempDir()
	b, err := NewWithOptions(Options{Cwd: dir, Environ: func() []string { return hostEnv() }, Warn: &warn, LandlockABI: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.Contains(warn.String(), "no Landlock") {
		t.Fatalf("want a warning about Landlock, got %q", warn.String())
	}
	if _, ok := b.Confined(); ok {
		t.Fatal("no Landlock: not confined")
	}
	e, _ := b.Open(context.Background(), "s")
	if res, err := e.Exec(context.Background(), backend.ExecRequest{Command: "echo hi"}); err != nil || !strings.Contains(string(res.Output), "hi") {
		t.Fatalf("commands still run: %v %q", err, res.Output)
	}
}

// TestSupervisorEndsGroupsWhenHermesDies kills a process standing in for
// hermes (this test binary re-run as a helper) while it runs a foreground
// command and a background one that each left a grandchild; every one of
// them must be gone.
func TestSupervisorEndsGroupsWhenHermesDies(t *testing.T) {
	if os.Getenv("HERMES_TEST_FAKE_HERMES") != "" {
		fakeHermesForKill()
		return
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSupervisorEndsGroupsWhenHermesDies$")
	cmd.Env = append(os.Environ(), "HERMES_TEST_FAKE_HERMES="+pids)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var got []int
	deadline := waitfor.Deadline(t)
	for len(got) < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		b, _ := os.ReadFile(pids)
		got = got[:0]
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				got = append(got, n)
			}
		}
	}
	if len(got) < 4 {
		t.Fatalf("helper did not start its commands: %v", got)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline = waitfor.Deadline(t)
	for {
		alive := []int{}
		for _, p := range got {
			if processAlive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range alive {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes outlived hermes: %v", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// fakeHermesForKill runs in the helper process: a background command and
// a foreground one, each with a grandchild, all sleeping; it writes their
// pids and waits to be killed.
func fakeHermesForKill() {
	pids := os.Getenv("HERMES_TEST_FAKE_HERMES")
	dir := filepath.Dir(pids)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	b, err := NewWithOptions(Options{Cwd: dir, Environ: func() []string { return env }, Supervise: true, Sandbox: SandboxOff})
	if err != nil {
		panic(err)
	}
	e, _ := b.Open(context.Background(), "s")
	_, _ = e.Start(context.Background(), backend.ExecRequest{Command: `sleep 300 & echo $$ $! >> pids; wait`})
	_, _ = e.Exec(context.Background(), backend.ExecRequest{Command: `sleep 300 & echo $$ $! >> pids; wait`})
	select {}
}

// BenchmarkExecGuard times one foreground command (`true`) per iteration
// with the guard off and on (workspace-write: ruleset reuse, thread,
// Landlock, supervisor registration). The difference is the guard's cost
// per command.
//
// Run: go test ./internal/backend/local -run '^$' -bench ExecGuard
func BenchmarkExecGuard(b *testing.B) {
	for _, mode := range []Sandbox{SandboxOff, SandboxWorkspaceWrite} {
		b.Run(string(mode), func(b *testing.B) {
			home := b.TempDir()
			dir := filepath.Join(home, "work")
			_ = os.MkdirAll(filepath.Join(home, ".hermes"), 0o755)
			_ = os.MkdirAll(dir, 0o755)
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
			bk, err := NewWithOptions(Options{Cwd: dir, Environ: func() []string { return env }, Sandbox: mode,
				HermesHome: filepath.Join(home, ".hermes"), Supervise: true})
			if err != nil {
				b.Fatal(err)
			}
			defer bk.Close()
			e, _ := bk.Open(context.Background(), "s")
			b.ResetTimer()
			for range b.N {
				if _, err := e.Exec(context.Background(), backend.ExecRequest{Command: "true"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGuardRulesetFollowsChanges: entries created after the first command
// (a new file in HOME, a new dir in HERMES_HOME) are readable by the next
// one, and a file renamed to .env in HERMES_HOME is not.
func TestGuardRulesetFollowsChanges(t *testing.T) {
	needLandlock(t)
	f := newGuardFixture(t, SandboxWorkspaceWrite)
	f.run(t, "true")
	for p, c := range map[string]string{filepath.Join(f.home, "later.txt"): "later", filepath.Join(f.hermesHome, "notes.md"): "notes"} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res := f.run(t, "cat "+f.home+"/later.txt "+f.hermesHome+"/notes.md"); string(res.Output) != "laternotes" {
		t.Fatalf("new entries must be readable: %q", res.Output)
	}
	if err := os.Rename(filepath.Join(f.hermesHome, "notes.md"), filepath.Join(f.hermesHome, ".env")); err != nil {
		t.Fatal(err)
	}
	if res := f.run(t, "cat "+f.hermesHome+"/.env"); res.ExitCode == 0 || strings.Contains(string(res.Output), "notes") {
		t.Fatalf("a file renamed to .env must become unreadable: %q", res.Output)
	}
}

// BenchmarkConfineThread times what the guard adds before each fork: the
// ruleset (cached; stat of the enumerated directories), a fresh locked
// thread, dropping CAP_SYS_PTRACE and landlock_restrict_self. The fork and
// exec of the shell are the same with and without the guard.
//
// Run: go test ./internal/backend/local -run '^$' -bench ConfineThread
func BenchmarkConfineThread(b *testing.B) {
	if landlockABI() < 1 {
		b.Skip("no Landlock")
	}
	home := b.TempDir()
	_ = os.MkdirAll(filepath.Join(home, ".hermes"), 0o755)
	g := newGuard(SandboxWorkspaceWrite, landlockABI(), filepath.Join(home, ".hermes"), []string{home})
	defer g.close()
	b.ResetTimer()
	for range b.N {
		fd, err := g.ruleset()
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			err := dropPtraceCapability()
			if err == nil {
				err = restrictThread(fd)
			}
			_ = syscall.Close(fd)
			done <- err
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// TestGuardHardLinksMadeEarlierReachNothing: hard links to config.yaml
// and .env made before the guard (an earlier run with local_sandbox off,
// a backup script) sit in the temp dir and the workspace, where commands
// may read and write. Landlock decides by path, so through them a command
// appended "approvals: {mode: off}" to config.yaml and read the key; the
// guard now gives such files a fresh inode first.
func TestGuardHardLinksMadeEarlierReachNothing(t *testing.T) {
	needLandlock(t)
	f := newGuardFixture(t, SandboxWorkspaceWrite)
	if err := os.Link(filepath.Join(f.hermesHome, ".env"), filepath.Join(f.work, "env.link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(f.hermesHome, "config.yaml"), filepath.Join(f.tmp, "cfg.link")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(f.hermesHome, "config.yaml"))
	res := f.run(t, `echo "approvals: {mode: off}" >> "$TMPDIR/cfg.link"; cat env.link`)
	if strings.Contains(string(res.Output), fakeKey) {
		t.Errorf(".env read through a hard link:\n%s", res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(f.hermesHome, ".env")); !strings.Contains(string(b), fakeKey) {
		t.Errorf(".env lost its content: %q", b)
	}
	if after, _ := os.ReadFile(filepath.Join(f.hermesHome, "config.yaml")); !bytes.Equal(before, after) {
		t.Errorf("config.yaml changed through a hard link:\n%s", after)
	}
	// A key written after the guard came up does not reach the link either.
	if err := os.WriteFile(filepath.Join(f.hermesHome, ".env"), []byte("OPENAI_API_KEY=rotated-"+fakeKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = f.run(t, `cat env.link`)
	if strings.Contains(string(res.Output), "rotated-") {
		t.Errorf(".env read through a hard link:\n%s", res.Output)
	}
	st, err := os.Stat(filepath.Join(f.hermesHome, "config.yaml"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("config.yaml lost its mode: %v %v", st.Mode(), err)
	}
}

// TestGuardRestoresProtectedModes: Landlock does not govern chmod, so a
// command could make .env readable to every local user (chmod 644) or
// HERMES_HOME writable by them; once the command ends, the guard takes
// those permissions back.
func TestGuardRestoresProtectedModes(t *testing.T) {
	needLandlock(t)
	f := newGuardFixture(t, SandboxWorkspaceWrite)
	if err := os.Chmod(f.hermesHome, 0o755); err != nil {
		t.Fatal(err)
	}
	res := f.run(t, "HERMES_HOME="+f.hermesHome+`; chmod 644 "$HERMES_HOME/.env" "$HERMES_HOME/state.db" && chmod 777 "$HERMES_HOME" "$HERMES_HOME/secrets" && echo changed`)
	if !strings.Contains(string(res.Output), "changed") {
		t.Skipf("chmod was refused, nothing to restore:\n%s", res.Output)
	}
	for p, want := range map[string]os.FileMode{
		filepath.Join(f.hermesHome, ".env"): 0o600, filepath.Join(f.hermesHome, "state.db"): 0o600,
		filepath.Join(f.hermesHome, "secrets"): 0o700, f.hermesHome: 0o755,
	} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v after the command, want %v", p, st.Mode().Perm(), want)
		}
	}
}

// TestHideProcessInsideAGuardedCommand: a hermes started as a command of
// another sandbox (hermes chat inside a box, as seed 000 runs it, or under
// the local guard) cannot write /proc/self/mem, since Landlock refuses the
// write; HideProcess still makes it non-dumpable and reports no error, so
// every run does not print a warning the user can do nothing about.
func TestHideProcessInsideAGuardedCommand(t *testing.T) {
	if os.Getenv("HERMES_TEST_NESTED_HIDE") != "" {
		if err := HideProcess(); err != nil {
			os.Stdout.WriteString("hide-error: " + err.Error() + "\n")
			return
		}
		if d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); d == 0 {
			os.Stdout.WriteString("hide-ok\n")
		}
		return
	}
	dir := t.TempDir()
	b, err := NewWithOptions(Options{Cwd: dir, Sandbox: SandboxWorkspaceWrite, Environ: func() []string { return hostEnv() }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := b.Confined(); !ok {
		t.Skip("no Landlock on this kernel: a nested hermes can write its own memory")
	}
	e, _ := b.Open(context.Background(), "s")
	res, err := e.Exec(context.Background(), backend.ExecRequest{Command: "HERMES_TEST_NESTED_HIDE=1 FAKE_API_KEY=" + fakeKey + " " + strconv.Quote(os.Args[0]) + " -test.run='^TestHideProcessInsideAGuardedCommand$'"})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Output); !strings.Contains(out, "hide-ok") {
		t.Fatalf("HideProcess in a guarded command:\n%s", out)
	}
}
