package tool

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/llm"
)

// execute_code limits (Hermes "code_execution": 300 s, 50 tool calls,
// 50 KB of output).
const (
	DefaultCodeTimeout      = 300 * time.Second
	DefaultCodeMaxToolCalls = 50
	maxCodeOutput           = 50_000  // bytes of the script's output kept (head and tail)
	maxCodeBytes            = 1 << 20 // the script itself
	maxRPCRequest           = 4 << 20 // one tool call's JSON line from the script
	rpcDialTimeout          = 30 * time.Second
	rpcMarker               = "\x1eHERMES_RPC "
)

//go:embed execute_code_runner.py
var codeRunner string

// CodeTools are the tools a script may call through hermes_tools (Hermes
// "code_execution_tool.py": SANDBOX_ALLOWED_TOOLS), when the session has
// them; terminal runs in the foreground only.
var CodeTools = []string{"terminal", "read_file", "write_file", "search_files", "patch", "web_search", "web_extract"}

// ExecuteCodeOptions are the dependencies of execute_code.
type ExecuteCodeOptions struct {
	Backend backend.Backend
	// Approvals checks the script before it runs, as the command
	// `python3 -c SCRIPT` typed in the terminal would be (so the isolated
	// box skips it and the local backend asks); the calls inside go
	// through their tools' own checks. nil runs every script (tests).
	Approvals *approval.Service
	// Tools returns the registry of the session calls act for (its tools
	// with its toolset filter); nil or a nil result: no tools.
	Tools func(sessionID string) *Registry
	// Redact hides secrets in the tool results sent to the script (as
	// the agent loop does for the model); nil = none.
	Redact func(string) string
	// Timeout is code_execution.timeout (0 = 300 s).
	Timeout time.Duration
	// MaxToolCalls is code_execution.max_tool_calls (0 = 50).
	MaxToolCalls int
}

// ExecuteCode is the `execute_code` tool (toolset code_execution): it runs
// a Python script inside the session's environment (the box with the box
// backend, a guarded command with local) whose `hermes_tools` module calls
// hermes's tools over a private RPC socket. See execute_code_runner.py for
// the script's side and execute_code_rpc.go for hermes's.
type ExecuteCode struct{ opts ExecuteCodeOptions }

// NewExecuteCode returns the tool.
func NewExecuteCode(opts ExecuteCodeOptions) *ExecuteCode {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultCodeTimeout
	}
	if opts.MaxToolCalls <= 0 {
		opts.MaxToolCalls = DefaultCodeMaxToolCalls
	}
	return &ExecuteCode{opts: opts}
}

// Toolset implements Tool.
func (t *ExecuteCode) Toolset() string { return "code_execution" }

// Parallel implements Tool: a script acts like a series of tool calls.
func (t *ExecuteCode) Parallel() bool { return false }

// Spec implements Tool.
func (t *ExecuteCode) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "execute_code",
		Description: "Run a Python script that calls tools programmatically, to do many tool calls in one step " +
			"(loops, filtering, aggregating) and return only what matters. Import them with " +
			"`from hermes_tools import terminal, read_file, write_file, search_files, patch, web_search, web_extract` " +
			"(those this session has); each takes the tool's arguments (positionally or by name) and returns its result, " +
			"parsed from JSON when it is JSON; a failed call returns a dict with \"error\". Print what you want to see: " +
			fmt.Sprintf("the result is the script's output (at most %d KB) and exit code. Limits: %s, %d tool calls per script; ",
				maxCodeOutput/1000, formatSeconds(t.opts.Timeout), t.opts.MaxToolCalls) +
			"terminal commands run in the foreground only. Runs in the same environment as terminal.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"code":{"type":"string","description":"Python 3 source to run; import tools from hermes_tools."}},` +
			`"required":["code"]}`),
	}
}

// codeResult is what the model sees.
type codeResult struct {
	Status        string  `json:"status"` // success, error, timeout, interrupted
	Output        string  `json:"output"`
	ExitCode      int     `json:"exit_code"`
	ToolCallsMade int     `json:"tool_calls_made"`
	Duration      float64 `json:"duration_seconds"`
	Error         string  `json:"error,omitempty"`
	Note          string  `json:"note,omitempty"`
}

// Run implements Tool.
func (t *ExecuteCode) Run(ctx context.Context, call Call) Result {
	var args struct {
		Code string `json:"code"`
	}
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("execute_code: %v", err)
	}
	switch {
	case strings.TrimSpace(args.Code) == "":
		return Errorf("execute_code: code is required: a Python script, e.g. {\"code\": \"from hermes_tools import terminal\\nprint(terminal('ls')['output'])\"}")
	case len(args.Code) > maxCodeBytes:
		return Errorf("execute_code: the script is %d bytes; keep it under %d (write large data to a file and read it from the script)", len(args.Code), maxCodeBytes)
	}
	if t.opts.Approvals != nil {
		d, err := t.opts.Approvals.Request(ctx, approval.Request{SessionID: call.SessionID, Tool: "execute_code",
			Command: "python3 -c " + shellQuote(args.Code)})
		if err != nil {
			return Errorf("execute_code: script not run: %v", err)
		}
		if !d.Allowed {
			return Errorf("execute_code: script not run: %s", d.Reason)
		}
	}
	env, err := t.opts.Backend.Open(ctx, call.SessionID)
	if err != nil {
		return Errorf("execute_code: the %s backend is not available: %v", t.opts.Backend.Kind(), err)
	}
	dialer, ok := env.(backend.UnixDialer)
	if !ok {
		return Errorf("execute_code: the %s backend cannot reach a script's tool socket; execute_code runs with terminal.backend local or box", t.opts.Backend.Kind())
	}
	var reg *Registry
	if t.opts.Tools != nil {
		reg = t.opts.Tools(call.SessionID)
	}
	s := &codeScript{t: t, call: call, env: env, dialer: dialer, tools: scriptTools(reg)}
	return s.run(ctx, args.Code)
}

// scriptTools maps the CodeTools reg has to their parameter names, in
// the order positional arguments fill them (required ones first).
func scriptTools(reg *Registry) map[string]Tool {
	out := map[string]Tool{}
	if reg == nil {
		return out
	}
	for _, name := range CodeTools {
		if tl, ok := reg.Get(name); ok {
			out[name] = tl
		}
	}
	return out
}

// codeScript is one execute_code call.
type codeScript struct {
	t      *ExecuteCode
	call   Call
	env    backend.Environment
	dialer backend.UnixDialer
	tools  map[string]Tool
	calls  int // tool calls made (answered by a tool)
}

// run starts the runner, serves its tool calls until it exits, and
// describes the outcome.
func (s *codeScript) run(ctx context.Context, code string) Result {
	dir, token, reply := "hermes-rpc-"+randomHex(16), randomHex(32), randomHex(32)
	params := map[string][]string{}
	for name, tl := range s.tools {
		params[name] = paramOrder(tl.Spec().Parameters)
	}
	boot, err := json.Marshal(map[string]any{"dir": dir, "token": token, "reply": reply, "tools": params, "code": code})
	if err != nil {
		return Errorf("execute_code: %v", err)
	}
	out := newScriptOutput(maxCodeOutput)
	start := time.Now()
	execCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan scriptExit, 1)
	go func() {
		res, err := s.env.Exec(execCtx, backend.ExecRequest{Command: "exec python3 -c " + shellQuote(codeRunner),
			Stdin: bytes.NewReader(append(boot, '\n')), Timeout: s.t.opts.Timeout, Output: out, DiscardOutput: true})
		done <- scriptExit{res, err}
	}()
	var (
		exit    scriptExit
		rpcErr  error
		sockDir string
	)
	select {
	case sock := <-out.marker:
		exit, rpcErr = s.serveScript(execCtx, stop, sock, dir, token, reply, done)
		if path.Base(path.Dir(sock)) == dir {
			sockDir = path.Dir(sock)
		}
	case exit = <-done:
	}
	if sockDir != "" {
		s.removeSocket(sockDir)
	}
	return s.result(exit.res, exit.err, rpcErr, out, time.Since(start))
}

// scriptExit is how the runner's command ended.
type scriptExit struct {
	res backend.ExecResult
	err error
}

// serveScript connects to the runner's socket sock and serves its tool
// calls until it exits; a socket that is not where the runner was told
// to make it, or a failed handshake, stops the script.
func (s *codeScript) serveScript(ctx context.Context, stop func(), sock, dir, token, reply string, done <-chan scriptExit) (scriptExit, error) {
	if !path.IsAbs(sock) || path.Clean(sock) != sock || path.Base(sock) != "s" || path.Base(path.Dir(sock)) != dir {
		stop()
		return <-done, fmt.Errorf("the runner reported an unexpected socket %q", sock)
	}
	conn, r, err := s.connect(ctx, sock, token, reply)
	if err != nil {
		stop()
		return <-done, err
	}
	// A tool call still running when the script ends (killed at its
	// wall-clock limit, or exited from another thread) is stopped too.
	toolCtx, stopTools := context.WithTimeout(ctx, s.t.opts.Timeout)
	defer stopTools()
	exited := make(chan scriptExit, 1)
	go func() {
		e := <-done
		stopTools()
		conn.Close() // a grandchild holding the socket must not keep the call open
		exited <- e
	}()
	err = s.serve(toolCtx, conn, r)
	conn.Close()
	return <-exited, err
}

// result builds the tool result of a finished script.
func (s *codeScript) result(res backend.ExecResult, err, rpcErr error, out *scriptOutput, took time.Duration) Result {
	text, cut := out.text()
	r := codeResult{Output: text, ExitCode: res.ExitCode, ToolCallsMade: s.calls, Duration: took.Round(time.Millisecond).Seconds(), Status: "success"}
	if cut > 0 {
		r.Note = fmt.Sprintf("output cut: %d bytes in the middle were dropped (at most %d are kept); print less", cut, maxCodeOutput)
	}
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		r.Status, r.Error = "interrupted", "the script was stopped: the turn was cancelled"
	case err != nil:
		r.Status, r.Error = "error", "could not run the script: "+err.Error()
	case res.TimedOut:
		r.Status, r.Error = "timeout", fmt.Sprintf("the script ran longer than %s (code_execution.timeout) and was killed", formatSeconds(s.t.opts.Timeout))
	case !out.sawMarker():
		r.Status, r.Error = "error", "the script did not start: python3 could not run the runner in this environment (see output)"
	case res.ExitCode != 0:
		r.Status, r.Error = "error", explainExit(res, s.t.opts.Timeout)
		if r.Error == "" {
			r.Error = fmt.Sprintf("the script exited with status %d", res.ExitCode)
		}
	}
	if rpcErr != nil {
		r.Error = strings.TrimPrefix(r.Error+"; tool connection: "+rpcErr.Error(), "; ")
		if r.Status == "success" {
			r.Status = "error"
		}
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	return Result{Content: string(b), IsError: r.Status != "success"}
}

// removeSocket removes the socket directory if the runner could not (it
// was killed before it removed it itself).
func (s *codeScript) removeSocket(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.env.Stat(ctx, dir); err != nil {
		return
	}
	s.env.Exec(ctx, backend.ExecRequest{Command: "rm -f -- " + shellQuote(dir+"/s") + "; rmdir -- " + shellQuote(dir), Timeout: 20 * time.Second})
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// shellQuote quotes s for /bin/sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
