package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend/local"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// hostEnviron is a minimal host environment plus extra entries.
func hostEnviron(extra ...string) func() []string {
	return func() []string {
		return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, extra...)
	}
}

type terminalFixture struct {
	dir, outDir string
	backend     *local.Backend
	term        *TerminalTool
	proc        *ProcessTool
}

func newTerminalFixture(t *testing.T, svc *approval.Service, environ ...string) terminalFixture {
	t.Helper()
	dir := t.TempDir()
	b, err := local.New(dir, nil, hostEnviron(environ...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	table := NewProcessTable()
	outDir := filepath.Join(t.TempDir(), "cache", "terminal")
	term := NewTerminalTool(TerminalOptions{Backend: b, Approvals: svc, OutputDir: outDir, Secrets: b.SecretValues(), Processes: table})
	return terminalFixture{dir: dir, outDir: outDir, backend: b, term: term, proc: NewProcessTool(table, b.SecretValues(), nil)}
}

func run(t *testing.T, tl Tool, args string) Result {
	t.Helper()
	return tl.Run(context.Background(), Call{ID: "c1", SessionID: "sess", Args: json.RawMessage(args)})
}

func decodeTerminal(t *testing.T, r Result) terminalResult {
	t.Helper()
	var out terminalResult
	if err := json.Unmarshal([]byte(r.Content), &out); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, r.Content)
	}
	return out
}

func TestTerminalRunsCommand(t *testing.T) {
	f := newTerminalFixture(t, nil)
	r := run(t, f.term, `{"command": "echo hello; echo oops >&2; exit 2"}`)
	out := decodeTerminal(t, r)
	if r.IsError || out.Output != "hello\noops\n" || out.ExitCode != 2 || out.Error != "exit code 2" {
		t.Fatalf("got %+v", out)
	}
	if out = decodeTerminal(t, run(t, f.term, `{"command": "echo '<a & b>'"}`)); out.Output != "<a & b>\n" || out.Error != "" {
		t.Fatalf("got %+v", out)
	}
}

func TestTerminalArgumentErrors(t *testing.T) {
	f := newTerminalFixture(t, nil)
	for args, want := range map[string]string{
		``:                                     "command is required",
		`{}`:                                   "command is required",
		`{"command": 5}`:                       "invalid arguments",
		`{"command": "ls", "timeout": -1}`:     "timeout must be a positive",
		`{"command": "ls", "workdir": "nope"}`: "could not run",
	} {
		r := run(t, f.term, args)
		if !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("%s: want error with %q, got %+v", args, want, r)
		}
	}
}

func TestTerminalTimeoutExplained(t *testing.T) {
	f := newTerminalFixture(t, nil)
	pidFile := filepath.Join(f.dir, "pid")
	out := decodeTerminal(t, run(t, f.term, `{"command": "sleep 300 & echo $! > pid; wait", "timeout": 1}`))
	if !strings.Contains(out.Error, "timed out after 1s") {
		t.Fatalf("got %+v", out)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := waitfor.Deadline(t)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(st), ") Z") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(st), ") Z") {
		t.Fatalf("grandchild %d survived", pid)
	}
}

func TestTerminalForegroundTimeoutCapped(t *testing.T) {
	f := newTerminalFixture(t, nil)
	out := decodeTerminal(t, run(t, f.term, `{"command": "true", "timeout": 100000}`))
	if !strings.Contains(out.Note, "capped to 10m0s") {
		t.Fatalf("got %+v", out)
	}
}

func TestTerminalSignalExplained(t *testing.T) {
	f := newTerminalFixture(t, nil)
	out := decodeTerminal(t, run(t, f.term, `{"command": "kill -KILL $$"}`))
	if out.Signal != "SIGKILL" || out.Error != "killed by SIGKILL (possibly out of memory)" {
		t.Fatalf("got %+v", out)
	}
	out = decodeTerminal(t, run(t, f.term, `{"command": "sh -c 'kill -SEGV $$'; exit $?"}`))
	if !strings.Contains(out.Error, "exit code 139") || !strings.Contains(out.Error, "segmentation fault") {
		t.Fatalf("got %+v", out)
	}
	out = decodeTerminal(t, run(t, f.term, `{"command": "no-such-command-xyz"}`))
	if out.ExitCode != 127 || !strings.Contains(out.Error, "command not found") {
		t.Fatalf("got %+v", out)
	}
}

func TestTerminalHugeOutputCappedAndSaved(t *testing.T) {
	f := newTerminalFixture(t, nil)
	out := decodeTerminal(t, run(t, f.term, `{"command": "seq 1 200000"}`))
	if !out.Truncated || out.FullOutputPath == "" {
		t.Fatalf("not truncated: %d chars", len(out.Output))
	}
	if n := len([]rune(out.Output)); n > MaxOutputChars+400 {
		t.Fatalf("shown output has %d chars", n)
	}
	if !strings.HasPrefix(out.Output, "1\n2\n3\n") || !strings.HasSuffix(out.Output, "199999\n200000\n") {
		t.Fatal("head or tail missing")
	}
	if !strings.Contains(out.Output, "[OUTPUT TRUNCATED: ") || !strings.Contains(out.Output, "lines) omitted") || !strings.Contains(out.Output, out.FullOutputPath) {
		t.Fatalf("marker missing: %s", out.Output[19990:20300])
	}
	full, err := os.ReadFile(out.FullOutputPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := seq(200000); string(full) != want {
		t.Fatalf("saved output differs: %d bytes, want %d", len(full), len(want))
	}
	if !strings.HasPrefix(out.FullOutputPath, f.outDir) {
		t.Fatalf("saved outside the output dir: %s", out.FullOutputPath)
	}
	// Small output leaves no file behind.
	run(t, f.term, `{"command": "echo small"}`)
	entries, _ := os.ReadDir(f.outDir)
	if len(entries) != 1 {
		t.Fatalf("output dir holds %d files, want 1", len(entries))
	}
}

func seq(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestTerminalInvalidUTF8AndSplitMultibyte(t *testing.T) {
	f := newTerminalFixture(t, nil)
	// "é" (C3 A9) written in two separate writes with a pause between, then an invalid byte.
	out := decodeTerminal(t, run(t, f.term, `{"command": "printf 'caf\\303'; sleep 0.2; printf '\\251 ok \\377\\376 end\\n'"}`))
	if out.Output != `café ok \xff\xfe end`+"\n" {
		t.Fatalf("got %q", out.Output)
	}
}

// TestTerminalGBKOutput: a command that sets a GBK locale for itself has its output
// decoded from GBK; without one the bytes are shown escaped.
func TestTerminalGBKOutput(t *testing.T) {
	f := newTerminalFixture(t, nil)
	out := decodeTerminal(t, run(t, f.term, `{"command": "env LC_ALL=zh_CN.GBK printf '\\304\\343\\272\\303\\n'"}`))
	if out.Output != "你好\n" {
		t.Errorf("with LC_ALL=zh_CN.GBK: %q", out.Output)
	}
	out = decodeTerminal(t, run(t, f.term, `{"command": "printf '\\304\\343\\272\\303\\n'"}`))
	if out.Output != `\xc4\xe3\xba\xc3`+"\n" {
		t.Errorf("without a charset: %q", out.Output)
	}
}

func TestTerminalScrubsSecrets(t *testing.T) {
	f := newTerminalFixture(t, nil, "OPENAI_API_KEY=sk-test-abcdef123456", "MY_PASSWORD=hunter2hunter2")
	out := decodeTerminal(t, run(t, f.term, `{"command": "env; echo HERMES_SESSION_ID=$HERMES_SESSION_ID"}`))
	if strings.Contains(out.Output, "OPENAI_API_KEY") || strings.Contains(out.Output, "sk-test-abcdef123456") || strings.Contains(out.Output, "MY_PASSWORD") {
		t.Fatalf("secret reached the command: %s", out.Output)
	}
	if !strings.Contains(out.Output, "HERMES_SESSION_ID=sess") {
		t.Fatalf("session id not exported: %s", out.Output)
	}
	// A secret the command reads from a file is redacted from the output.
	if err := os.WriteFile(filepath.Join(f.dir, ".env"), []byte("OPENAI_API_KEY=sk-test-abcdef123456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = decodeTerminal(t, run(t, f.term, `{"command": "cat .env"}`))
	if out.Output != "OPENAI_API_KEY=[REDACTED]\n" {
		t.Fatalf("got %q", out.Output)
	}
}

func TestTerminalApprovals(t *testing.T) {
	f := newTerminalFixture(t, approval.New(approval.Config{}))
	r := run(t, f.term, `{"command": "rm -rf /"}`)
	if !r.IsError || !strings.Contains(r.Content, "never runs") {
		t.Fatalf("hardline: %+v", r)
	}
	if err := os.Mkdir(filepath.Join(f.dir, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = run(t, f.term, `{"command": "rm -rf build"}`)
	if !r.IsError || !strings.Contains(r.Content, "--yolo") {
		t.Fatalf("headless dangerous command: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "build")); err != nil {
		t.Fatal("a denied command ran")
	}
	yolo := newTerminalFixture(t, approval.New(approval.Config{Yolo: true}))
	if r := run(t, yolo.term, `{"command": "mkdir b && rm -rf b && echo gone"}`); r.IsError || !strings.Contains(r.Content, "gone") {
		t.Fatalf("yolo: %+v", r)
	}
}

func TestBackgroundProcessLifecycle(t *testing.T) {
	f := newTerminalFixture(t, nil, "GITHUB_TOKEN=ghp_secretsecret")
	r := run(t, f.term, `{"command": "echo ready; while read l; do echo \"got $l\"; done; echo done; exit 3", "background": true}`)
	var started map[string]any
	if err := json.Unmarshal([]byte(r.Content), &started); err != nil || r.IsError {
		t.Fatalf("start: %+v", r)
	}
	id := started["process_id"].(string)
	if id != "proc_1" {
		t.Fatalf("id %q", id)
	}
	list := run(t, f.proc, `{"action": "list"}`)
	if !strings.Contains(list.Content, id) || !strings.Contains(list.Content, `"running"`) {
		t.Fatalf("list: %s", list.Content)
	}
	// Another session does not see it.
	other := f.proc.Run(context.Background(), Call{SessionID: "other", Args: json.RawMessage(`{"action": "poll", "session_id": "` + id + `"}`)})
	if !other.IsError {
		t.Fatal("a process must be invisible to other sessions")
	}
	if r := run(t, f.proc, `{"action": "write", "session_id": "`+id+`", "data": "one\n"}`); r.IsError {
		t.Fatalf("write: %+v", r)
	}
	if r := run(t, f.proc, `{"action": "write", "id": "`+id+`", "data": "two\n"}`); r.IsError {
		t.Fatalf("write by id: %+v", r)
	}
	// Close stdin through the process so the loop ends: kill is not needed.
	e := f.proc.table.get("sess", id)
	_ = e.proc.CloseStdin()
	w := run(t, f.proc, `{"action": "wait", "session_id": "`+id+`", "timeout": 30}`)
	if w.IsError || !strings.Contains(w.Content, `"exit_code": 3`) || !strings.Contains(w.Content, "got one\\ngot two\\ndone") {
		t.Fatalf("wait: %s", w.Content)
	}
	logR := run(t, f.proc, `{"action": "log", "session_id": "`+id+`", "offset": 2, "limit": 1}`)
	if !strings.Contains(logR.Content, `"output": "got one\n"`) || !strings.Contains(logR.Content, "lines 2-2 of 4") {
		t.Fatalf("log: %s", logR.Content)
	}
}

func TestBackgroundPollKillAndErrors(t *testing.T) {
	f := newTerminalFixture(t, nil)
	r := run(t, f.term, `{"command": "echo first; sleep 300", "background": true}`)
	if r.IsError {
		t.Fatal(r.Content)
	}
	w := run(t, f.proc, `{"action": "wait", "session_id": "proc_1", "timeout": 0.3}`)
	if !strings.Contains(w.Content, "still running") {
		t.Fatalf("wait timeout: %s", w.Content)
	}
	p := run(t, f.proc, `{"action": "poll", "session_id": "proc_1"}`)
	if !strings.Contains(p.Content, `"new_output": "first\n"`) {
		t.Fatalf("poll: %s", p.Content)
	}
	p = run(t, f.proc, `{"action": "poll", "session_id": "proc_1"}`)
	if !strings.Contains(p.Content, `"new_output": ""`) {
		t.Fatalf("second poll repeats output: %s", p.Content)
	}
	k := run(t, f.proc, `{"action": "kill", "session_id": "proc_1"}`)
	if k.IsError || !strings.Contains(k.Content, `"exited"`) || !strings.Contains(k.Content, "SIGTERM") {
		t.Fatalf("kill: %s", k.Content)
	}
	for args, want := range map[string]string{
		`{"action": "poll"}`:                                       "needs session_id",
		`{"action": "dance", "session_id": "proc_1"}`:              "unknown action",
		`{"action": "poll", "session_id": "proc_9"}`:               "no background process",
		`{"action": "write", "session_id": "proc_1"}`:              "needs data",
		`{"action": "write", "session_id": "proc_1", "data": "x"}`: "exited",
	} {
		if r := run(t, f.proc, args); !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("%s: want %q, got %+v", args, want, r)
		}
	}
}

// TestTerminalSpillIsCappedAndPruned: a command printing far more than
// MaxSpillBytes leaves a spill file of at most that size (plus a note),
// and old spill files are pruned to KeepSpillFiles.
func TestTerminalSpillIsCappedAndPruned(t *testing.T) {
	f := newTerminalFixture(t, nil)
	os.MkdirAll(f.outDir, 0o700)
	for i := range KeepSpillFiles + 5 {
		p := filepath.Join(f.outDir, "terminal-old"+strconv.Itoa(i)+".log")
		os.WriteFile(p, []byte("old"), 0o600)
		old := time.Now().Add(-time.Duration(i+1) * time.Hour)
		os.Chtimes(p, old, old)
	}
	cmd := "head -c " + strconv.Itoa(MaxSpillBytes+3<<20) + " /dev/zero | tr '\\\\0' a"
	r := decodeTerminal(t, run(t, f.term, `{"command":"`+cmd+`"}`))
	if r.FullOutputPath == "" {
		t.Fatalf("no spill file named: %+v", r.Error)
	}
	fi, err := os.Stat(r.FullOutputPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < MaxSpillBytes || fi.Size() > MaxSpillBytes+200 {
		t.Errorf("spill file holds %d bytes, want %d plus a note", fi.Size(), MaxSpillBytes)
	}
	if left, _ := filepath.Glob(filepath.Join(f.outDir, "terminal-*.log")); len(left) > KeepSpillFiles {
		t.Errorf("%d spill files kept, want at most %d", len(left), KeepSpillFiles)
	}
}

// TestProcessWriteChecksTheWholeLine: a command split over several process
// writes ("r", then "m -rf victim\n"; or a backslash-continued line) is
// checked as the line the shell runs, and perl started inside the shell
// does not get its program past the check as "shell commands" ended by
// __END__. Before, each piece was checked alone and victim/ was deleted.
func TestProcessWriteChecksTheWholeLine(t *testing.T) {
	svc := approval.New(approval.Config{})
	f := newTerminalFixture(t, svc)
	proc := NewProcessTool(f.proc.table, nil, svc)
	victim := filepath.Join(f.dir, "victim")
	if err := os.MkdirAll(filepath.Join(victim, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, writes := range [][]string{
		{"r", "m -rf victim\n"},
		{"r\\\n", "m -rf victim\n"},
		{"perl\n", "system \"rm -rf victim\";\n", "__END__\n"},
	} {
		r := run(t, f.term, `{"command": "sh", "background": true}`)
		var started map[string]any
		if err := json.Unmarshal([]byte(r.Content), &started); err != nil || r.IsError {
			t.Fatalf("start: %+v", r)
		}
		id := started["process_id"].(string)
		refused := false
		for _, w := range writes {
			data, _ := json.Marshal(w)
			if r := run(t, proc, `{"action": "write", "session_id": "`+id+`", "data": `+string(data)+`}`); r.IsError {
				refused = true
				break
			}
		}
		e := proc.table.get("sess", id)
		_ = e.proc.CloseStdin()
		run(t, proc, `{"action": "wait", "session_id": "`+id+`", "timeout": 30}`)
		if !refused {
			t.Errorf("%q: every write went through", writes)
		}
		if _, err := os.Stat(victim); err != nil {
			t.Fatalf("%q deleted victim/: %v", writes, err)
		}
	}
	// Ordinary use still works: a line split over writes, then run.
	r := run(t, f.term, `{"command": "sh", "background": true}`)
	var started map[string]any
	_ = json.Unmarshal([]byte(r.Content), &started)
	id := started["process_id"].(string)
	for _, w := range []string{`echo he`, `llo\n`} {
		if r := run(t, proc, `{"action": "write", "session_id": "`+id+`", "data": "`+w+`"}`); r.IsError {
			t.Fatalf("write %q: %+v", w, r)
		}
	}
	_ = proc.table.get("sess", id).proc.CloseStdin()
	if w := run(t, proc, `{"action": "wait", "session_id": "`+id+`", "timeout": 30}`); !strings.Contains(w.Content, "hello") {
		t.Fatalf("split ordinary write: %s", w.Content)
	}
}
