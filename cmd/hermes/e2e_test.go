package main_test

// End-to-end tests: the real hermes binary, built once in TestMain, runs
// against the in-repo fake model server (internal/llm/llmtest) on loopback,
// with a fresh HERMES_HOME, HOME and workspace per test. The child's
// environment is passed explicitly; nothing of the test process's own
// environment leaks in except PATH.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// hermesBin is the binary built by TestMain.
var hermesBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hermes-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hermesBin = filepath.Join(dir, "hermes")
	build := exec.Command("go", "build", "-o", hermesBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building hermes for the end-to-end tests:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fakeOpenRouterKey is the API key given to every OpenRouter run; tests
// assert it never reaches state, logs or the model.
const fakeOpenRouterKey = "sk-or-test-SECRET123"

// e2e is one test's world: a fake model server, HERMES_HOME, HOME and a
// workspace directory that hermes runs in.
type e2e struct {
	t         *testing.T
	srv       *llmtest.Server
	home      string // HERMES_HOME
	userHome  string // HOME
	workspace string
	env       []string // extra KEY=VALUE for every run
	// lastResumeRequests is the fake model of the latest resumeServer.
	lastResumeRequests *llmtest.Server
}

// newE2E starts a fake model server with turns and wires OpenRouter and
// Anthropic to it.
func newE2E(t *testing.T, turns ...llmtest.Turn) *e2e {
	t.Helper()
	root := t.TempDir()
	e := &e2e{
		t:         t,
		srv:       llmtest.NewServer(t, turns...),
		home:      filepath.Join(root, "hermes-home"),
		userHome:  filepath.Join(root, "home"),
		workspace: filepath.Join(root, "work"),
	}
	for _, d := range []string{e.home, e.userHome, e.workspace} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.env = []string{
		"OPENROUTER_BASE_URL=" + e.srv.URL,
		"OPENROUTER_API_KEY=" + fakeOpenRouterKey,
	}
	return e
}

// baseEnv is the environment every hermes child gets.
func (e *e2e) baseEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.userHome,
		"HERMES_HOME=" + e.home,
		"LANG=C.UTF-8",
	}
}

// result is a finished hermes process.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s\n--- stderr ---\n%s", r.code, r.stdout, r.stderr)
}

// command returns an unstarted hermes child in the workspace with the
// test's environment plus extraEnv.
func (e *e2e) command(ctx context.Context, extraEnv []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, hermesBin, args...)
	cmd.Dir = e.workspace
	cmd.Env = append(append(e.baseEnv(), e.env...), extraEnv...)
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	return cmd, &stdout, &stderr
}

// run runs hermes with args to completion (at most 30 s).
func (e *e2e) run(args ...string) result { return e.runEnv(nil, args...) }

// runEnv is run with extra environment variables.
func (e *e2e) runEnv(extraEnv []string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, stdout, stderr := e.command(ctx, extraEnv, args...)
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String(), code: exitCode(err)}
	if ctx.Err() != nil {
		e.t.Fatalf("hermes %s did not finish in 30 s\n%s", strings.Join(args, " "), res)
	}
	return res
}

// mustRun runs hermes and fails the test unless it exits 0.
func (e *e2e) mustRun(args ...string) result {
	e.t.Helper()
	res := e.run(args...)
	if res.code != 0 {
		e.t.Fatalf("hermes %s: want exit 0\n%s", strings.Join(args, " "), res)
	}
	return res
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// writeFile writes a workspace file.
func (e *e2e) writeFile(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.workspace, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// requests returns the bodies the fake server received, decoded.
func (e *e2e) requests() []map[string]any {
	var out []map[string]any
	for _, r := range e.srv.Requests() {
		out = append(out, r.JSON())
	}
	return out
}

// request returns the decoded body of request i (0-based), failing the test
// when there are fewer.
func (e *e2e) request(i int) map[string]any {
	e.t.Helper()
	reqs := e.requests()
	if i >= len(reqs) {
		e.t.Fatalf("want at least %d model requests, the fake server got %d", i+1, len(reqs))
	}
	return reqs[i]
}

// latestSessionID returns the id of the most recent session (`hermes sessions list`).
func (e *e2e) latestSessionID() string {
	e.t.Helper()
	res := e.mustRun("sessions", "list", "--limit", "1")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) < 2 {
		e.t.Fatalf("sessions list has no session:\n%s", res)
	}
	return strings.Fields(lines[1])[0]
}

// chatMessage is one message of an OpenAI-wire request.
type chatMessage = llmtest.ChatMessage

// chatMessages decodes the messages of an OpenAI-wire request body.
func chatMessages(t *testing.T, body map[string]any) []chatMessage {
	t.Helper()
	raw, err := json.Marshal(body["messages"])
	if err != nil {
		t.Fatal(err)
	}
	var msgs []chatMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		t.Fatalf("request messages: %v", err)
	}
	return msgs
}

// toolResults returns the tool messages of an OpenAI-wire request by call id.
func toolResults(t *testing.T, body map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range chatMessages(t, body) {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text()
		}
	}
	return out
}

// args renders tool arguments as the JSON text the fake server streams.
func args(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestVersion checks `hermes --version`: the first line is exactly Hermes
// Agent's format, with a release date written like Hermes (2026.11.30,
// no zero padding), then the install directory and the Go version as
// Hermes prints its own and Python's, then the binary and install method.
func TestVersion(t *testing.T) {
	e := newE2E(t)
	res := e.mustRun("--version")
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	first := regexp.MustCompile(`^Hermes Agent v(\d+)\.(\d+)\.(\d+) \((\d{4})\.([1-9]\d?)\.([1-9]\d?)\)$`)
	m := first.FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("first line %q does not match `Hermes Agent vX.Y.Z (YYYY.M.D)`", lines[0])
	}
	date := m[4] + "." + m[5] + "." + m[6]
	if _, err := time.Parse("2006.1.2", date); err != nil {
		t.Errorf("release date %q is not a calendar date: %v", date, err)
	}
	dir := filepath.Dir(hermesBin)
	if filepath.Base(dir) == "bin" {
		dir = filepath.Dir(dir)
	}
	// Hermes's own second and third lines ("Install directory: /opt/hermes",
	// "Python: 3.13.5"), then the binary and the install method.
	if len(lines) != 5 || lines[1] != "Install directory: "+dir || !strings.HasPrefix(lines[2], "Go: 1.") ||
		lines[3] != "Binary: "+hermesBin || !strings.HasPrefix(lines[4], "Install method: ") {
		t.Errorf("want the install directory %s, the Go version, the binary and the install method after the first line:\n%s", dir, res.stdout)
	}
}

// TestBrokenConfigReportsFileAndLine: a config.yaml that is not valid YAML
// stops the run with the file and line at fault, never a Go stack trace.
func TestBrokenConfigReportsFileAndLine(t *testing.T) {
	e := newE2E(t, llmtest.Turn{Text: "should not be asked"})
	cfg := filepath.Join(e.home, "config.yaml")
	if err := os.WriteFile(cfg, []byte("model:\n  default: x\n  provider: [openrouter\nagent:\n  max_turns: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := e.run("chat", "-Q", "--yolo", "-q", "hi")
	if res.code == 0 {
		t.Fatalf("want a failure for broken YAML\n%s", res)
	}
	if !strings.Contains(res.stderr, cfg) || !regexp.MustCompile(`line \d+|:\d+`).MatchString(res.stderr) {
		t.Errorf("want the error to name %s and a line\n%s", cfg, res)
	}
	if strings.Contains(res.stderr, "goroutine ") || strings.Contains(res.stderr, "panic:") {
		t.Errorf("Go stack trace on stderr\n%s", res)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("the model was called %d times despite the broken config", n)
	}
	// A wrong type names the key.
	if err := os.WriteFile(cfg, []byte("agent:\n  max_turns: lots\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = e.run("chat", "-Q", "--yolo", "-q", "hi")
	if res.code == 0 || !strings.Contains(res.stderr, "max_turns") || !strings.Contains(res.stderr, cfg) {
		t.Errorf("want a failure naming %s and agent.max_turns\n%s", cfg, res)
	}
}

// TestOpenRouterToolCallThenAnswer is seed 001's command against the fake
// server: one read_file tool call, then the final answer. With -Q only the
// answer is on stdout, and the file's content reached the model.
func TestOpenRouterToolCallThenAnswer(t *testing.T) {
	const answer = "This workspace is a tiny Go service that prints a greeting."
	e := newE2E(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_read", Name: "read_file", Args: args(map[string]any{"path": "README.md"})}}, ChunkSize: 7},
		llmtest.Turn{Text: answer, ChunkSize: 5},
	)
	e.writeFile("README.md", "# greeter\nmarker-line-4711: prints hello\n")
	res := e.mustRun("chat", "-Q", "--yolo", "--provider", "openrouter", "--model", "anthropic/claude-sonnet-4.6",
		"-q", "Inspect this workspace and summarize its purpose")
	if res.stdout != answer+"\n" {
		t.Errorf("stdout must be only the final answer\nwant %q\ngot  %q", answer+"\n", res.stdout)
	}
	if n := len(e.srv.Requests()); n != 2 {
		t.Fatalf("want 2 model requests, got %d", n)
	}
	first := e.request(0)
	if first["model"] != "anthropic/claude-sonnet-4.6" {
		t.Errorf("model sent = %v", first["model"])
	}
	if got := e.srv.Requests()[0].Header.Get("Authorization"); got != "Bearer "+fakeOpenRouterKey {
		t.Errorf("Authorization header = %q", got)
	}
	out := toolResults(t, e.request(1))["call_read"]
	if !strings.Contains(out, "marker-line-4711: prints hello") {
		t.Errorf("the read_file result sent back does not hold the file content: %q", out)
	}
}

// TestIncidentTriageExample runs examples/incident-triage (replay provider,
// real tools) from a copy in which the incident names another release: the
// report must follow the incident, not the script.
func TestIncidentTriageExample(t *testing.T) {
	e := newE2E(t)
	src := filepath.Join("..", "..", "examples", "incident-triage")
	if err := os.CopyFS(e.workspace, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(e.workspace, "incidents", "first.json")
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "checkout-42") {
		t.Fatalf("the example incident changed; update this test: %s", data)
	}
	if err := os.WriteFile(first, bytes.ReplaceAll(data, []byte("checkout-42"), []byte("billing-977")), 0o644); err != nil {
		t.Fatal(err)
	}
	res := e.mustRun("chat", "-Q", "--yolo", "--ignore-user-config", "--provider", "replay", "--replay", "model.jsonl",
		"-q", "Study runbook.md, apply it to incidents/first.json and write reports/incident.md")
	if !strings.HasPrefix(res.stdout, "Wrote reports/incident.md.") || strings.Count(strings.TrimSpace(res.stdout), "\n") != 0 {
		t.Errorf("stdout must be only the final answer, got %q", res.stdout)
	}
	report, err := os.ReadFile(filepath.Join(e.workspace, "reports", "incident.md"))
	if err != nil {
		t.Fatalf("the run did not write reports/incident.md: %v\n%s", err, res)
	}
	for _, want := range []string{"# Incident report: billing-977", "8.0%", "1700 ms"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q (derived from the incident):\n%s", want, report)
		}
	}
	if strings.Contains(string(report), "checkout-42") {
		t.Errorf("report names the release of the original incident, not the one read:\n%s", report)
	}
}

// configureModel saves OpenRouter and its model to config.yaml with
// `hermes config set`, as a user does once, so later runs need no
// --provider/--model. It also turns model-written titles off: the fake
// answers requests from its script in order, and the title request a
// REPL/TUI session sends in the background after its first exchange would
// take the script's next turn (titles are tested in internal/session and
// internal/cli's TestTitlesByRunKind).
func (e *e2e) configureModel() {
	e.t.Helper()
	e.mustRun("config", "set", "model.provider", "openrouter")
	e.mustRun("config", "set", "model.default", "anthropic/claude-sonnet-4.6")
	e.mustRun("config", "set", "auxiliary.title_generation.enabled", "false")
}
