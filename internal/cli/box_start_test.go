package cli

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/protect"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// runDetaching runs `hermes args...` like run, with this test binary
// standing in for hermes in the processes it starts (asHermesEnv).
func (c *boxCLI) runDetaching(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Executable: c.exe, Now: time.Now,
		Getenv: func(k string) string {
			if k == "HERMES_HOME" {
				return c.home
			}
			return ""
		},
		Environ: func() []string { return append(os.Environ(), asHermesEnv+"=1") }}
	code := app.Run(waitfor.Context(t), args)
	return out.String(), errb.String(), code
}

func unusedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Seed 002's background flow (issue 25): box start returns at once with
// the box running and its port published; an exec that launches a server
// with nohup ... & returns while the server keeps running; /proc/net/tcp
// in the box shows its port; the host reaches it through the published
// port; -e reaches every command; box ls shows state and ports; box stop
// ends the box and closes the port.
func TestBoxStartExecBackgroundServerStop(t *testing.T) {
	if _, err := os.Stat("/usr/bin/busybox"); err != nil {
		t.Skip("needs /usr/bin/busybox (busybox-static in .ci/run) for its httpd")
	}
	c := newBoxCLI(t)
	if err := os.WriteFile(filepath.Join(c.ws, "index.html"), []byte("hello from a started box\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostPort := unusedPort(t)
	task := "started-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { c.run(t, "", "box", "stop", task); c.run(t, "", "box", "rm", task) })
	out, errs, code := c.runDetaching(t, "box", "start", "-p", strconv.Itoa(hostPort)+":8080", "-e", "GREETING=hi there", task)
	if code != 0 || strings.TrimSpace(out) != task {
		t.Fatalf("box start: code %d, stdout %q, stderr %s", code, out, errs)
	}
	out, errs, code = c.run(t, "", "box", "exec", task, "--", "sh", "-c", "nohup busybox httpd -f -p 0.0.0.0:8080 -h . > /tmp/httpd.log 2>&1 &")
	if code != 0 {
		t.Fatalf("background launch: code %d %s %s", code, out, errs)
	}
	waitfor.Until(t, "port 8080 in the box's /proc/net/tcp", func() bool {
		out, _, _ := c.run(t, "", "box", "exec", task, "--", "cat", "/proc/net/tcp")
		return strings.Contains(strings.ToUpper(out), ":1F90 ")
	})
	if got, err := httpGet("http://127.0.0.1:" + strconv.Itoa(hostPort) + "/index.html"); err != nil || got != "hello from a started box\n" {
		t.Fatalf("through the published port: %q %v", got, err)
	}
	if out, _, _ := c.run(t, "", "box", "exec", task, "--", "sh", "-c", "echo \"$GREETING\""); out != "hi there\n" {
		t.Errorf("-e GREETING in a later exec: %q", out)
	}
	out, _, _ = c.run(t, "", "box", "ls")
	if !strings.Contains(out, "running (box start") || !strings.Contains(out, "127.0.0.1:"+strconv.Itoa(hostPort)+"->8080") {
		t.Errorf("box ls:\n%s", out)
	}
	// A second start of a running box is refused with the fix.
	if _, errs, code := c.runDetaching(t, "box", "start", task); code == 0 || !strings.Contains(errs, "hermes box stop "+task) {
		t.Errorf("second start: code %d %s", code, errs)
	}
	if out, errs, code := c.run(t, "", "box", "stop", task); code != 0 || out != "stopped "+task+"\n" {
		t.Fatalf("box stop: code %d %q %s", code, out, errs)
	}
	if _, err := httpGet("http://127.0.0.1:" + strconv.Itoa(hostPort) + "/index.html"); err == nil {
		t.Error("the published port still answers after box stop")
	}
	if out, _, _ := c.run(t, "", "box", "ls"); !strings.Contains(out, "stopped") {
		t.Errorf("box ls after stop:\n%s", out)
	}
	if _, errs, code := c.run(t, "", "box", "stop", task); code == 0 || !strings.Contains(errs, "not running") {
		t.Errorf("stop of a stopped box: code %d %s", code, errs)
	}
}

// box stop gives the box's processes SIGTERM before the box goes: a
// command that traps it finishes its work (writes a file in the
// workspace).
func TestBoxStopTermsProcessesFirst(t *testing.T) {
	c := newBoxCLI(t)
	task := startTrapping(t, c, "stopterm", "echo drained > drained; exit 0")
	if _, errs, code := c.run(t, "", "box", "stop", "--timeout", "5m", task); code != 0 {
		t.Fatalf("box stop: %d %s", code, errs)
	}
	if b, err := os.ReadFile(filepath.Join(c.ws, "drained")); err != nil || string(b) != "drained\n" {
		t.Errorf("the command did not get SIGTERM before the stop: %q %v", b, err)
	}
}

// box stop --timeout is the only grace: the box's owner does not give the
// processes a second SIGTERM and its own --stop-timeout after it (a new
// user's trial: `box stop --timeout 3s` took 13 s, and a server that takes
// a second SIGTERM for "quit now" lost its clean shutdown).
func TestBoxStopTimeoutIsTheOnlyGrace(t *testing.T) {
	c := newBoxCLI(t)
	task := startTrapping(t, c, "stoponce", "echo term >> terms")
	_, errs, code := c.run(t, "", "box", "stop", "--timeout", "1s", task)
	if code != 0 || !strings.Contains(errs, "after SIGTERM: killing them") {
		t.Fatalf("box stop: %d %s", code, errs)
	}
	// One SIGTERM at most (the trap may not have run before the kill on a
	// loaded machine; the owner's own grace sent a second one 1 s later).
	if b, _ := os.ReadFile(filepath.Join(c.ws, "terms")); strings.Count(string(b), "term\n") > 1 {
		t.Errorf("the command got %d SIGTERMs, want one", strings.Count(string(b), "term\n"))
	}
	if _, err := os.Stat(stopRequestPath(c.home, task)); !os.IsNotExist(err) {
		t.Errorf("the stop request outlived the stop: %v", err)
	}
}

// startTrapping starts (box start) a box whose command runs onTerm on each
// SIGTERM and otherwise waits, and returns its task once the command runs.
func startTrapping(t *testing.T, c *boxCLI, name, onTerm string) string {
	t.Helper()
	task := name + "-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { c.run(t, "", "box", "stop", task); c.run(t, "", "box", "rm", task) })
	out, errs, code := c.runDetaching(t, "box", "start", task, "--", "sh", "-c",
		"trap '"+onTerm+"' TERM; echo up > up; while :; do sleep 1; done")
	if code != 0 || strings.TrimSpace(out) != task {
		t.Fatalf("box start: code %d %q %s", code, out, errs)
	}
	waitfor.Until(t, "the command to start", func() bool { _, err := os.Stat(filepath.Join(c.ws, "up")); return err == nil })
	return task
}

// --lifetime stops the box by itself, and a box whose CMD exits stops
// with it; either way the record goes and box ls says stopped.
func TestBoxStartLifetimeAndCommandEnd(t *testing.T) {
	c := newBoxCLI(t)
	for name, args := range map[string][]string{
		"lifetime": {"--lifetime", "200ms"},
		"cmd-end":  {"--", "true"},
	} {
		task := name + "-" + strconv.Itoa(os.Getpid())
		t.Cleanup(func() { c.run(t, "", "box", "stop", task); c.run(t, "", "box", "rm", task) })
		argv := append([]string{"box", "start"}, args[:len(args):len(args)]...)
		if args[0] == "--" {
			argv = append([]string{"box", "start", task}, args...)
		} else {
			argv = append(argv, task)
		}
		if out, errs, code := c.runDetaching(t, argv...); code != 0 || strings.TrimSpace(out) != task {
			t.Fatalf("%s: box start: code %d %q %s", name, code, out, errs)
		}
		waitfor.Until(t, name+": the box to stop by itself", func() bool {
			_, err := os.Stat(startedPath(c.home, task))
			out, _, _ := c.run(t, "", "box", "ls")
			return os.IsNotExist(err) && strings.Contains(out, "stopped")
		})
		log, _ := os.ReadFile(startedLogPath(c.home, task))
		want := map[string]string{"lifetime": "lifetime of 200ms is over", "cmd-end": "the command exited (status 0)"}[name]
		if !strings.Contains(string(log), want) {
			t.Errorf("%s: log lacks %q:\n%s", name, want, log)
		}
	}
}

// Bad flags are refused before anything starts.
func TestBoxStartRefusesBadFlags(t *testing.T) {
	c := &boxCLI{home: t.TempDir(), ws: t.TempDir()}
	for _, args := range [][]string{
		{"box", "start", "-p", "8080", "t1"},
		{"box", "start", "-e", "NOVALUE", "t1"},
		{"box", "start", "t1", "t2"},
	} {
		if _, errs, code := c.run(t, "", args...); code == 0 || errs == "" {
			t.Errorf("%q: code %d %q", args, code, errs)
		}
	}
	if _, err := os.Stat(startedDir(c.home)); err == nil {
		t.Error("a refused start left state")
	}
}

// TestBoxStartPortTakenLeavesNothing: `box start -p P:8080` while another
// started box publishes P fails naming that box, and leaves no stopped box
// behind in box ls.
func TestBoxStartPortTakenLeavesNothing(t *testing.T) {
	c := newBoxCLI(t)
	hostPort := strconv.Itoa(unusedPort(t))
	first, second := "holder-"+strconv.Itoa(os.Getpid()), "late-"+strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		c.run(t, "", "box", "stop", first)
		c.run(t, "", "box", "rm", first)
		c.run(t, "", "box", "rm", second)
	})
	if _, errs, code := c.runDetaching(t, "box", "start", "-p", hostPort+":8080", first); code != 0 {
		t.Fatalf("first box start: %d %s", code, errs)
	}
	_, errs, code := c.runDetaching(t, "box", "start", "-p", hostPort+":8080", second)
	if code == 0 || !strings.Contains(errs, "address already in use") || !strings.Contains(errs, "hermes box stop "+first) {
		t.Fatalf("second box start on the same port: code %d, stderr %s", code, errs)
	}
	if out, _, _ := c.run(t, "", "box", "ls"); strings.Contains(out, second) {
		t.Fatalf("the failed start left its box:\n%s", out)
	}
}

// Attacker trial 2 on issue 23, finding 6: `box exec` into a box `box
// start` runs was never checked, so a nested repository's core.fsmonitor
// and an executable hook it planted stayed on the host. The exec now
// checks when its command ends, and box stop checks once more (in the
// process that ran the box) after the box's processes are gone.
func TestBoxExecIntoStartedBoxChecksTheWorkspace(t *testing.T) {
	c := newBoxCLI(t)
	task := "startck-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { c.run(t, "", "box", "stop", task); c.run(t, "", "box", "rm", task) })
	if out, errs, code := c.runDetaching(t, "box", "start", task); code != 0 || strings.TrimSpace(out) != task {
		t.Fatalf("box start: code %d, stdout %q, stderr %s", code, out, errs)
	}
	plant := `mkdir -p n/.git/hooks && printf '[core]\n\tfsmonitor = "echo PWNED"\n' > n/.git/config && printf '#!/bin/sh\necho PWNED\n' > n/.git/hooks/pre-commit && chmod +x n/.git/hooks/pre-commit`
	_, errs, code := c.run(t, "", "box", "exec", task, "--", "sh", "-c", plant)
	if code != 0 {
		t.Fatalf("box exec: code %d %s", code, errs)
	}
	for _, p := range []string{"n/.git/config", "n/.git/hooks/pre-commit"} {
		if !strings.Contains(errs, p) {
			t.Errorf("box exec's stderr does not name %s: %q", p, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(c.ws, "n/.git/config"+protect.Refused)); err != nil {
		t.Errorf("n/.git/config was not moved aside after box exec: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.ws, "n/.git/hooks"+protect.Refused)); err != nil {
		if _, err := os.Stat(filepath.Join(c.ws, "n/.git/hooks/pre-commit"+protect.Refused)); err != nil {
			t.Errorf("n/.git/hooks/pre-commit was not moved aside after box exec: %v", err)
		}
	}
	// A detached writer planted by exec is gone after box stop, and its
	// config with it.
	if _, errs, code := c.run(t, "", "box", "exec", task, "--", "sh", "-c",
		`setsid nohup sh -c 'while :; do mkdir -p w/.git; grep -qs fsmonitor w/.git/config || printf "[core]\n\tfsmonitor = \"echo PWNED\"\n" >> w/.git/config; sleep .02; done' </dev/null >/dev/null 2>&1 &`); code != 0 {
		t.Fatalf("box exec (writer): code %d %s", code, errs)
	}
	waitfor.Until(t, "the detached writer to set core.fsmonitor after the exec's check", func() bool {
		data, _ := os.ReadFile(filepath.Join(c.ws, "w/.git/config"))
		return strings.Contains(string(data), "fsmonitor")
	})
	if out, errs, code := c.run(t, "", "box", "stop", task); code != 0 {
		t.Fatalf("box stop: code %d %q %s", code, out, errs)
	}
	if data, err := os.ReadFile(filepath.Join(c.ws, "w/.git/config")); err == nil && strings.Contains(string(data), "fsmonitor") {
		t.Errorf("w/.git/config sets core.fsmonitor after box stop:\n%s", data)
	}
}

// A box start whose CMD cannot start, and a box exec --new whose setup
// fails (a taken port, a malformed -p), leave no box behind in box ls; a
// box that existed before is kept.
func TestFailedStartRemovesTheBoxItMade(t *testing.T) {
	c := newBoxCLI(t)
	pid := strconv.Itoa(os.Getpid())
	noCmd, taken, typo, kept := "nocmd-"+pid, "taken-"+pid, "typo-"+pid, "kept-"+pid
	t.Cleanup(func() {
		for _, task := range []string{noCmd, taken, typo, kept} {
			c.run(t, "", "box", "rm", task)
		}
	})
	if _, errs, code := c.runDetaching(t, "box", "start", noCmd, "--", "/no/such/cmd"); code == 0 || !strings.Contains(errs, "/no/such/cmd") {
		t.Fatalf("box start -- /no/such/cmd: %d %s", code, errs)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if _, errs, code := c.run(t, "", "box", "exec", "--new", "-p", port+":80", taken, "--", "true"); code == 0 || !strings.Contains(errs, "address already in use") {
		t.Fatalf("box exec --new on a taken port: %d %s", code, errs)
	}
	if _, errs, code := c.run(t, "", "box", "exec", "--new", "-p", "127.0.0.1:"+port+":80", typo, "--", "true"); code == 0 || !strings.Contains(errs, "HOSTPORT:BOXPORT") {
		t.Fatalf("box exec --new with a malformed -p: %d %s", code, errs)
	}
	if _, errs, code := c.run(t, "", "box", "exec", "--new", kept, "--", "true"); code != 0 {
		t.Fatalf("box exec --new %s: %s", kept, errs)
	}
	if _, _, code := c.run(t, "", "box", "exec", "-p", port+":80", kept, "--", "true"); code == 0 {
		t.Fatal("box exec on a taken port succeeded")
	}
	out, _, _ := c.run(t, "", "box", "ls")
	for _, gone := range []string{noCmd, taken, typo} {
		if strings.Contains(out, gone) {
			t.Errorf("the failed start left box %s:\n%s", gone, out)
		}
	}
	if !strings.Contains(out, kept) {
		t.Errorf("a box that existed before a failed exec was removed:\n%s", out)
	}
}

// New-user trial: box start's log (boxes-started/TASK.log) is kept after
// box stop for debugging, and box rm removes it with the box.
func TestBoxStartLogKeptAfterStopRemovedByRm(t *testing.T) {
	c := newBoxCLI(t)
	task := "startlog-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { c.run(t, "", "box", "stop", task); c.run(t, "", "box", "rm", task) })
	if out, errs, code := c.runDetaching(t, "box", "start", task, "--", "sh", "-c", "echo hello-log; while :; do sleep 1; done"); code != 0 {
		t.Fatalf("box start: code %d %q %s", code, out, errs)
	}
	logPath := filepath.Join(c.home, "boxes-started", task+".log")
	waitfor.Until(t, "the command's output in the log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "hello-log")
	})
	if out, errs, code := c.run(t, "", "box", "rm", task); code == 0 {
		t.Fatalf("box rm of a running started box succeeded: %q %s", out, errs)
	}
	if _, err := os.Stat(logPath); err != nil {
		t.Fatalf("a refused rm took the running box's log: %v", err)
	}
	if _, errs, code := c.run(t, "", "box", "stop", task); code != 0 {
		t.Fatalf("box stop: %d %s", code, errs)
	}
	if _, err := os.Stat(logPath); err != nil {
		t.Fatalf("the log went with box stop: %v", err)
	}
	if out, errs, code := c.run(t, "", "box", "rm", task); code != 0 {
		t.Fatalf("box rm: code %d %q %s", code, out, errs)
	}
	if _, err := os.Stat(logPath); err == nil {
		t.Error("box rm left boxes-started/" + task + ".log")
	}
}
