package tool

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/protect"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// codeFixture is execute_code on a local backend with terminal and the
// file tools.
type codeFixture struct {
	terminalFixture
	code *ExecuteCode
	reg  *Registry
}

func newCodeFixture(t *testing.T, opts ExecuteCodeOptions) codeFixture {
	t.Helper()
	f := newTerminalFixture(t, nil)
	files := FileToolOptions{Backend: f.backend}
	reg := NewRegistry(f.term, NewReadFileTool(files), NewWriteFileTool(files))
	opts.Backend = f.backend
	opts.Tools = func(string) *Registry { return reg }
	return codeFixture{terminalFixture: f, code: NewExecuteCode(opts), reg: reg}
}

func decodeCode(t *testing.T, r Result) codeResult {
	t.Helper()
	var out codeResult
	if err := json.Unmarshal([]byte(r.Content), &out); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, r.Content)
	}
	return out
}

func codeArgs(script string) string {
	b, _ := json.Marshal(map[string]string{"code": script})
	return string(b)
}

func TestExecuteCodeCallsToolsLocal(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{})
	r := run(t, f.code, codeArgs(`
from hermes_tools import terminal, write_file, read_file
w = write_file("notes.txt", "alpha\nbeta\n")
r = read_file(path="notes.txt")
t = terminal("echo hi-$((6*7))")
print("term:", t["output"].strip(), t["exit_code"])
print("read:", "beta" in str(r))
`))
	res := decodeCode(t, r)
	if r.IsError || res.Status != "success" || res.ToolCallsMade != 3 {
		t.Fatalf("got %+v", r)
	}
	if !strings.Contains(res.Output, "term: hi-42 0") || !strings.Contains(res.Output, "read: True") {
		t.Fatalf("output %q", res.Output)
	}
}

// dialRecorder is the local backend recording the sockets execute_code
// dials.
type dialRecorder struct {
	backend.Backend
	mu    sync.Mutex
	paths []string
}

func (b *dialRecorder) Open(ctx context.Context, task string) (backend.Environment, error) {
	env, err := b.Backend.Open(ctx, task)
	if err != nil {
		return nil, err
	}
	return &recordingEnv{Environment: env, b: b}, nil
}

type recordingEnv struct {
	backend.Environment
	b *dialRecorder
}

func (e *recordingEnv) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	e.b.mu.Lock()
	e.b.paths = append(e.b.paths, path)
	e.b.mu.Unlock()
	return e.Environment.(backend.UnixDialer).DialUnix(ctx, path)
}

// TestExecuteCodeSocketIsGoneOnceHermesIsIn: the script's socket and its
// directory are removed as soon as hermes has connected (the script sees
// no socket while it runs), and are gone after the call.
func TestExecuteCodeSocketIsGoneOnceHermesIsIn(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{})
	rec := &dialRecorder{Backend: f.backend}
	f.code.opts.Backend = rec
	r := run(t, f.code, codeArgs(`
import os, tempfile
from hermes_tools import terminal
terminal("true")
print("left:", sorted(n for n in os.listdir(tempfile.gettempdir()) if n.startswith("hermes-rpc-")))
`))
	res := decodeCode(t, r)
	if r.IsError || len(rec.paths) != 1 {
		t.Fatalf("got %+v, dialled %v", r, rec.paths)
	}
	dir := filepath.Dir(rec.paths[0])
	if st, err := os.Stat(dir); err == nil || !os.IsNotExist(err) {
		t.Fatalf("socket dir %s still there after the call: %v %v", dir, st, err)
	}
	if strings.Contains(res.Output, filepath.Base(dir)) {
		t.Fatalf("the script saw its own socket dir while it ran: %q", res.Output)
	}
}

// TestExecuteCodeToolCallLimit: a script flooding tool calls gets the
// limit's error for every call past code_execution.max_tool_calls, and
// only that many ran.
func TestExecuteCodeToolCallLimit(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{MaxToolCalls: 5})
	r := run(t, f.code, codeArgs(`
from hermes_tools import terminal
errors = []
for i in range(200):
    r = terminal("echo %d >> calls.txt" % i)
    if "error" in r:
        errors.append(r["error"])
print("refused:", len(errors))
print("first:", errors[0])
`))
	res := decodeCode(t, r)
	if res.ToolCallsMade != 5 || !strings.Contains(res.Output, "refused: 195") || !strings.Contains(res.Output, "max_tool_calls") {
		t.Fatalf("got %+v", res)
	}
	data, _ := os.ReadFile(filepath.Join(f.dir, "calls.txt"))
	if got := strings.Count(string(data), "\n"); got != 5 {
		t.Fatalf("%d commands ran, want 5", got)
	}
}

// TestExecuteCodeOutputFloodIsBounded: 20 MB of output come back as at
// most maxCodeOutput bytes, head and tail, with a note.
func TestExecuteCodeOutputFloodIsBounded(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{})
	r := run(t, f.code, codeArgs(`
import sys
print("FIRST")
chunk = "x" * 1023 + "\n"
for i in range(20 * 1024):
    sys.stdout.write(chunk)
print("LAST")
`))
	res := decodeCode(t, r)
	if r.IsError || len(res.Output) > maxCodeOutput+100 || !strings.HasPrefix(res.Output, "FIRST") ||
		!strings.HasSuffix(strings.TrimSpace(res.Output), "LAST") || !strings.Contains(res.Note, "output cut") {
		t.Fatalf("status %s, %d bytes, note %q, start %.40q", res.Status, len(res.Output), res.Note, res.Output)
	}
}

// TestExecuteCodeErrorsAreResults: a script that raises, a timeout, an
// unknown tool and an empty script are results the model reads.
func TestExecuteCodeErrorsAreResults(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{})
	r := run(t, f.code, codeArgs("from hermes_tools import terminal\nprint(terminal.__doc__)\nraise ValueError('boom')\n"))
	if res := decodeCode(t, r); !r.IsError || res.ExitCode != 1 || !strings.Contains(res.Output, "ValueError: boom") || !strings.Contains(res.Output, "command") {
		t.Fatalf("raise: %+v", res)
	}
	r = run(t, f.code, codeArgs("import hermes_tools\nprint(hermes_tools._Conn)\n"))
	if res := decodeCode(t, r); !r.IsError || !strings.Contains(res.Output, "AttributeError") {
		t.Fatalf("module internals: %+v", res)
	}
	if r := run(t, f.code, `{"code": "  "}`); !r.IsError || !strings.Contains(r.Content, "code is required") {
		t.Fatalf("empty: %+v", r)
	}
}

// TestExecuteCodeRunnerRefusesWrongToken: the runner serves only a peer
// presenting the call's token; others are disconnected, and hermes
// refuses a peer that cannot answer with the second token.
func TestExecuteCodeRunnerRefusesWrongToken(t *testing.T) {
	cmd := exec.Command("python3", "-c", codeRunner)
	dir := "hermes-rpc-" + randomHex(16)
	boot, _ := json.Marshal(map[string]any{"dir": dir, "token": "right-token", "reply": "reply-token", "tools": map[string][]string{}, "code": "print('ran')"})
	cmd.Stdin = strings.NewReader(string(boot) + "\n")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skip("python3:", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	sock, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), rpcMarker)
	if err != nil || !ok {
		t.Fatalf("marker line %q: %v", line, err)
	}
	for _, hello := range []string{`{"token":"wrong-token"}`, `{"token":"right-token-x"}`, `not json`, `{"token":1}`, strings.Repeat("a", 5000)} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, hello+"\n")
		if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
			t.Fatalf("hello %.30q answered %q %v", hello, got, err)
		}
		c.Close()
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, `{"token":"right-token"}`+"\n")
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || strings.TrimSpace(got) != `{"token": "reply-token"}` {
		t.Fatalf("right token answered %q %v", got, err)
	}
	// The script runs once the socket is removed.
	if line, err := out.ReadString('\n'); line != "ran\n" {
		t.Fatalf("script output %q %v", line, err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket still there once hermes is in: %v", err)
	}
}

// TestExecuteCodeScriptItselfIsApproved: on the local backend a script
// that does more than call tools (os.system) is checked as `python3 -c
// SCRIPT` would be: with nobody to ask it does not run; one that only
// calls tools runs (its calls are checked one by one).
func TestExecuteCodeScriptItselfIsApproved(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{Approvals: approval.New(approval.Config{})})
	for _, script := range []string{
		"import os\nos.system('touch pwned')\n",
		// An attacker trial's: a private name imported by name and an os
		// function longer than the words the check listed.
		"from hermes_tools import terminal\nfrom random import _os as q\nq.execvp('touch', ['touch', 'pwned'])\n",
	} {
		r := run(t, f.code, codeArgs(script))
		if !r.IsError || !strings.Contains(r.Content, "script not run") {
			t.Fatalf("%q: got %+v", script, r)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "pwned")); !os.IsNotExist(err) {
			t.Fatalf("the unapproved script %q ran: %v", script, err)
		}
	}
	r := run(t, f.code, codeArgs("from hermes_tools import terminal\nprint(terminal('echo ok')['output'])\n"))
	if res := decodeCode(t, r); r.IsError || !strings.Contains(res.Output, "ok") {
		t.Fatalf("tools-only script: %+v", r)
	}
}

// TestExecuteCodeWallClockLimit: a script that never ends is killed at
// code_execution.timeout and reported as a timeout.
func TestExecuteCodeWallClockLimit(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{Timeout: 2 * time.Second})
	r := run(t, f.code, codeArgs("import threading\nthreading.Event().wait()\n"))
	if res := decodeCode(t, r); !r.IsError || res.Status != "timeout" || !strings.Contains(res.Error, "code_execution.timeout") {
		t.Fatalf("got %+v", r)
	}
}

// TestExecuteCodeCallsGoThroughTheToolsChecks: a call from a script meets
// the checks of a direct call: a write to a protected path with nobody to
// approve it is refused, and results reach the script redacted.
func TestExecuteCodeCallsGoThroughTheToolsChecks(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{Redact: func(s string) string { return strings.ReplaceAll(s, "tok-SECRET-42", "[REDACTED]") }})
	files := FileToolOptions{Backend: f.backend, Protected: protect.New(protect.Defaults()), Approvals: approval.New(approval.Config{})}
	f.reg.Add(NewWriteFileTool(files))
	r := run(t, f.code, codeArgs(`from hermes_tools import write_file, terminal
print("write:", write_file(".vscode/settings.json", "{}"))
print("echo:", terminal("echo tok-SECRET-42")["output"])`))
	res := decodeCode(t, r)
	if !strings.Contains(res.Output, "write: {'error':") || !strings.Contains(res.Output, "echo: [REDACTED]") || strings.Contains(res.Output, "tok-SECRET-42") {
		t.Fatalf("script output %q", res.Output)
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".vscode", "settings.json")); !os.IsNotExist(err) {
		t.Fatalf("the protected write happened: %v", err)
	}
}

// TestExecuteCodeEndsWhatTheScriptStarted: a child the script started
// and left running (subprocess.Popen, in the script's process group) is
// killed when the call ends (execute_code attacker trial, finding 3: it
// kept running after the call and after hermes exited).
func TestExecuteCodeEndsWhatTheScriptStarted(t *testing.T) {
	f := newCodeFixture(t, ExecuteCodeOptions{})
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	r := run(t, f.code, codeArgs(`
import subprocess
p = subprocess.Popen(["sleep", "600"])
open(`+strconv.Quote(pidFile)+`, "w").write(str(p.pid))
print("started", p.pid)
`))
	if res := decodeCode(t, r); r.IsError || res.Status != "success" {
		t.Fatalf("got %+v", r)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, "the script's child to be gone", func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || strings.Contains(string(stat), ") Z ")
	})
}
