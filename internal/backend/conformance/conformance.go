// Package conformance is the behaviour every terminal backend (local, box,
// ssh, docker, e2b, vercel_sandbox) owes the terminal and file tools,
// written once and run against each backend from its own tests:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Target{Open: func(t *testing.T) backend.Backend { ... }})
//	}
//
// It checks exit codes, signals, timeouts, environment and working
// directory, stdin, file read/write/stat/list with atomic replacement,
// large and binary output, background processes (input, kill, wait) and
// that closing an environment leaves nothing running. A backend whose
// platform lacks something (no signal names over a remote protocol, say)
// declares it in Target rather than weakening the suite.
package conformance

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Target describes the backend under test.
type Target struct {
	// Open returns a fresh backend on the same workspace each time it is
	// called within one Run (the close check reopens it to look at what
	// the first one left); the suite opens one task per subtest and closes
	// the backend at the end of the subtest.
	Open func(t *testing.T) backend.Backend
	// NoSignalNames: the backend reports a command killed by a signal as
	// exit code 128+n without the signal's name (a remote shell that only
	// sees the exit status).
	NoSignalNames bool
	// KeepsDetached: processes that a finished command detached
	// (`nohup server &`) outlive the environment's Close, as they outlive
	// the shell on the host (the local backend: a dev server started by
	// the agent keeps serving; the suite detaches with trap '' HUP, as
	// nohup does, since BusyBox images lack nohup). Processes the environment itself runs are
	// still ended.
	KeepsDetached bool
	// NoStdinWrite: a running background process cannot be written to
	// (the Vercel Sandbox API has no stdin); its input comes from
	// ExecRequest.Stdin instead, and Write must fail rather than drop.
	NoStdinWrite bool
	// TextOutput: command output travels as JSON strings (Vercel's log
	// stream), so bytes that are not UTF-8 arrive as U+FFFD; text output
	// is still exact.
	TextOutput bool
}

// Run runs every conformance check as a subtest of t.
func Run(t *testing.T, target Target) {
	checks := []struct {
		name string
		fn   func(t *testing.T, target Target, env backend.Environment)
	}{
		{"ExitCodeOutputOrder", checkExitCode},
		{"Workdir", checkWorkdir},
		{"EnvAndStdin", checkEnvAndStdin},
		{"Signal", checkSignal},
		{"TimeoutKillsTree", checkTimeout},
		{"ContextCancel", checkCancel},
		{"BigOutput", checkBigOutput},
		{"BinaryOutput", checkBinaryOutput},
		{"OutputStreams", checkOutputStreams},
		{"Files", checkFiles},
		{"FileSearch", checkFileSearch},
		{"Background", checkBackground},
		{"BackgroundKill", checkBackgroundKill},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			env := open(t, target, "conformance")
			c.fn(t, target, env)
		})
	}
	t.Run("CloseLeavesNothingRunning", func(t *testing.T) { checkClose(t, target) })
}

// open opens task on a fresh backend closed with the subtest.
func open(t *testing.T, target Target, task string) backend.Environment {
	t.Helper()
	b := target.Open(t)
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := b.Open(ctx, task)
	if err != nil {
		t.Fatalf("open %s on the %s backend: %v", task, b.Kind(), err)
	}
	return env
}

func exec(t *testing.T, env backend.Environment, req backend.ExecRequest) backend.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := env.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Command, err)
	}
	return res
}

func checkExitCode(t *testing.T, _ Target, env backend.Environment) {
	res := exec(t, env, backend.ExecRequest{Command: "echo out; echo err >&2; echo out2; exit 3"})
	if res.ExitCode != 3 || string(res.Output) != "out\nerr\nout2\n" {
		t.Fatalf("got exit %d output %q, want 3 and %q", res.ExitCode, res.Output, "out\nerr\nout2\n")
	}
	if res := exec(t, env, backend.ExecRequest{Command: "true"}); res.ExitCode != 0 || res.TimedOut || res.Signal != "" {
		t.Fatalf("true: %+v", res)
	}
}

func checkWorkdir(t *testing.T, _ Target, env backend.Environment) {
	wd := env.Workdir()
	if !path.IsAbs(wd) {
		t.Fatalf("Workdir %q is not absolute", wd)
	}
	if res := exec(t, env, backend.ExecRequest{Command: "pwd -P; mkdir -p sub"}); strings.TrimSpace(string(res.Output)) == "" {
		t.Fatalf("pwd printed nothing: %+v", res)
	}
	res := exec(t, env, backend.ExecRequest{Command: "basename \"$(pwd)\"", Workdir: "sub"})
	if strings.TrimSpace(string(res.Output)) != "sub" {
		t.Fatalf("relative workdir sub: pwd ends in %q", res.Output)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := env.Exec(ctx, backend.ExecRequest{Command: "pwd", Workdir: "no-such-dir"}); err == nil {
		t.Fatal("a missing workdir must be an error, not a command run elsewhere")
	}
}

func checkEnvAndStdin(t *testing.T, _ Target, env backend.Environment) {
	res := exec(t, env, backend.ExecRequest{Command: `tr a-z A-Z; printf '%s|%s\n' "$FOO" "$SPACED"`,
		Stdin: strings.NewReader("hello\n"), Env: map[string]string{"FOO": "bar", "SPACED": "a b 'c' \"d\" $x"}})
	if want := "HELLO\nbar|a b 'c' \"d\" $x\n"; string(res.Output) != want {
		t.Fatalf("got %q, want %q", res.Output, want)
	}
}

func checkSignal(t *testing.T, target Target, env backend.Environment) {
	res := exec(t, env, backend.ExecRequest{Command: "kill -KILL $$"})
	if target.NoSignalNames {
		if res.ExitCode != 128+9 && res.ExitCode != -1 {
			t.Fatalf("killed by SIGKILL: exit %d, want 137 or -1", res.ExitCode)
		}
		return
	}
	if res.Signal != "SIGKILL" || res.ExitCode != -1 {
		t.Fatalf("killed by SIGKILL: signal %q exit %d", res.Signal, res.ExitCode)
	}
}

func checkTimeout(t *testing.T, _ Target, env backend.Environment) {
	start := time.Now()
	res := exec(t, env, backend.ExecRequest{Command: "(sleep 60; echo late > grandchild-ran) & sleep 60", Timeout: 500 * time.Millisecond})
	if !res.TimedOut {
		t.Fatalf("a command past its timeout: %+v", res)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("timeout of 500ms returned after %s", d)
	}
	// The environment still works after a timeout.
	if res := exec(t, env, backend.ExecRequest{Command: "echo ok"}); string(res.Output) != "ok\n" {
		t.Fatalf("after a timeout: %+v", res)
	}
}

func checkCancel(t *testing.T, _ Target, env backend.Environment) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := env.Exec(ctx, backend.ExecRequest{Command: "sleep 60"})
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("a cancelled context stopped the command after %s (%+v, %v)", d, res, err)
	}
}

// checkBigOutput: 4 MiB of output arrives complete (the tools spill it).
func checkBigOutput(t *testing.T, _ Target, env backend.Environment) {
	var streamed bytes.Buffer
	res := exec(t, env, backend.ExecRequest{Command: "head -c 4194304 /dev/zero | tr '\\0' x; echo; echo end",
		Output: &streamed, DiscardOutput: true})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if streamed.Len() != 4<<20+len("\nend\n") || !bytes.HasSuffix(streamed.Bytes(), []byte("x\nend\n")) {
		t.Fatalf("streamed %d bytes ending %q, want %d", streamed.Len(), tail(streamed.Bytes()), 4<<20+5)
	}
}

func checkBinaryOutput(t *testing.T, target Target, env backend.Environment) {
	res := exec(t, env, backend.ExecRequest{Command: `printf '\000\001\377\376end'`})
	want := "\x00\x01\xff\xfeend"
	if target.TextOutput {
		want = "\x00\x01\ufffd\ufffdend"
	}
	if string(res.Output) != want {
		t.Fatalf("binary output %q, want %q", res.Output, want)
	}
}

func checkOutputStreams(t *testing.T, _ Target, env backend.Environment) {
	first := make(chan struct{})
	w := &notifyWriter{at: []byte("first"), ch: first}
	done := make(chan backend.ExecResult, 1)
	go func() {
		res, _ := env.Exec(context.Background(), backend.ExecRequest{Command: "echo first; sleep 2; echo second", Output: w})
		done <- res
	}()
	select {
	case <-first:
	case res := <-done:
		t.Fatalf("output arrived only at the end: %q", res.Output)
	case <-time.After(30 * time.Second):
		t.Fatal("no output streamed within 30s")
	}
	select {
	case <-done:
		t.Fatal("command ended before its sleep: output is not streamed while it runs")
	default:
	}
	<-done
}

func checkFiles(t *testing.T, _ Target, env backend.Environment) {
	ctx := context.Background()
	if err := env.WriteFile(ctx, "dir/sub/notes.txt", []byte("one\n"), 0o644); err != nil {
		t.Fatalf("write a file in new directories: %v", err)
	}
	if err := env.WriteFile(ctx, "dir/sub/notes.txt", []byte("two\n"), 0o644); err != nil {
		t.Fatalf("replace a file: %v", err)
	}
	abs := path.Join(env.Workdir(), "dir/sub/notes.txt")
	got, err := env.ReadFile(ctx, abs)
	if err != nil || string(got) != "two\n" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if res := exec(t, env, backend.ExecRequest{Command: "cat dir/sub/notes.txt"}); string(res.Output) != "two\n" {
		t.Fatalf("a command sees %q after WriteFile", res.Output)
	}
	exec(t, env, backend.ExecRequest{Command: "printf 'made by a command' > dir/cmd.txt"})
	if got, err := env.ReadFile(ctx, "dir/cmd.txt"); err != nil || string(got) != "made by a command" {
		t.Fatalf("ReadFile of a command's file: %q, %v", got, err)
	}
	bin := []byte{0, 1, 2, 0xff, '\n', 0}
	if err := env.WriteFile(ctx, "bin.dat", bin, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := env.ReadFile(ctx, "bin.dat"); !bytes.Equal(got, bin) {
		t.Fatalf("binary file round trip: %v", got)
	}
	fi, err := env.Stat(ctx, "dir/sub/notes.txt")
	if err != nil || fi.Size != 4 || fi.IsDir || fi.Name != "notes.txt" {
		t.Fatalf("stat: %+v %v", fi, err)
	}
	entries, err := env.ReadDir(ctx, "dir")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name] = e.IsDir
	}
	if len(names) != 2 || !names["sub"] || names["cmd.txt"] {
		t.Fatalf("ReadDir(dir) = %+v", entries)
	}
	if _, err := env.ReadFile(ctx, "missing.txt"); err == nil {
		t.Fatal("reading a missing file must fail")
	}
	if _, err := env.Stat(ctx, "missing.txt"); err == nil {
		t.Fatal("stat of a missing file must fail")
	}
}

// checkFileSearch: the search tool greps through the environment.
func checkFileSearch(t *testing.T, _ Target, env backend.Environment) {
	ctx := context.Background()
	for name, body := range map[string]string{"src/a.go": "package a\n// TODO: fix\n", "src/b.txt": "nothing\n", "src/deep/c.go": "TODO again\n"} {
		if err := env.WriteFile(ctx, name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := exec(t, env, backend.ExecRequest{Command: "grep -rn TODO src | sort"})
	if want := "src/a.go:2:// TODO: fix\nsrc/deep/c.go:1:TODO again\n"; string(res.Output) != want {
		t.Fatalf("grep found %q, want %q", res.Output, want)
	}
}

func checkBackground(t *testing.T, target Target, env backend.Environment) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := backend.ExecRequest{Command: `while read line; do echo "got $line"; done; echo bye; exit 4`}
	if target.NoStdinWrite {
		req.Stdin = strings.NewReader("one\ntwo\n")
	}
	p, err := env.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if target.NoStdinWrite {
		if _, err := p.Write([]byte("x\n")); err == nil {
			t.Fatal("Write on a backend without stdin must fail, not drop the input")
		}
	} else {
		if _, err := p.Write([]byte("one\ntwo\n")); err != nil {
			t.Fatal(err)
		}
		if err := p.CloseStdin(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || string(res.Output) != "got one\ngot two\nbye\n" || !p.Done() {
		t.Fatalf("background process: %+v output %q", res, res.Output)
	}
}

func checkBackgroundKill(t *testing.T, _ Target, env backend.Environment) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := env.Start(ctx, backend.ExecRequest{Command: "echo up; sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if _, err := p.Wait(short); err == nil {
		t.Fatal("Wait on a running process returned before its context ended")
	}
	for !strings.Contains(string(p.Output()), "up") {
		if ctx.Err() != nil {
			t.Fatalf("output so far: %q", p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(ctx)
	if err != nil || res.ExitCode == 0 || !p.Done() {
		t.Fatalf("after Kill: %+v %v", res, err)
	}
}

// checkClose: a background process that ticks a counter in the workspace
// stops ticking once its environment is closed.
func checkClose(t *testing.T, target Target) {
	b := target.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := b.Open(ctx, "conformance-close")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Start(ctx, backend.ExecRequest{Command: "i=0; while :; do i=$((i+1)); echo $i > ticks; sleep 0.05; done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Start(ctx, backend.ExecRequest{Command: "sh -c 'trap \"\" HUP; i=0; while [ $i -lt 300 ] && [ ! -e stop-ticks ]; do i=$((i+1)); echo $i > nohup-ticks; sleep 0.05; done' </dev/null >/dev/null 2>&1 &"}); err != nil {
		t.Fatal(err)
	}
	for {
		if got, err := env.ReadFile(ctx, "nohup-ticks"); err == nil && len(got) > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the background loops never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = env.Close()
	_ = b.Close()
	b2 := target.Open(t)
	t.Cleanup(func() { _ = b2.Close() })
	env2, err := b2.Open(ctx, "conformance-close")
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		got, _ := env2.ReadFile(ctx, name)
		return string(got)
	}
	before, beforeNohup := read("ticks"), read("nohup-ticks")
	time.Sleep(500 * time.Millisecond)
	if after := read("ticks"); after != before {
		t.Fatalf("a background loop still runs after Close: ticks %q then %q", before, after)
	}
	// Stop the detached loop of a KeepsDetached backend before the
	// workspace is removed.
	t.Cleanup(func() {
		_ = env2.WriteFile(context.Background(), "stop-ticks", nil, 0o644)
		time.Sleep(200 * time.Millisecond)
	})
	if after := read("nohup-ticks"); after != beforeNohup && !target.KeepsDetached {
		t.Fatalf("a nohup'ed loop still runs after Close: %q then %q", beforeNohup, after)
	}
}

type notifyWriter struct {
	at   []byte
	ch   chan struct{}
	seen bytes.Buffer
	done bool
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.seen.Write(p)
	if !w.done && bytes.Contains(w.seen.Bytes(), w.at) {
		w.done = true
		close(w.ch)
	}
	return len(p), nil
}

func tail(b []byte) string {
	if len(b) > 20 {
		b = b[len(b)-20:]
	}
	return fmt.Sprintf("%q", b)
}
