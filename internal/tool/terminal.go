package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/protect"
)

// Terminal defaults (Hermes "tools-reference.md": terminal.timeout 180 s;
// foreground commands are capped, longer work goes to background: true).
const (
	DefaultTerminalTimeout = 180 * time.Second
	MaxForegroundTimeout   = 600 * time.Second
)

// TerminalOptions are the dependencies of the terminal tool.
type TerminalOptions struct {
	Backend backend.Backend
	// Approvals checks every command first; nil runs every command (only
	// for tests and trusted embedders).
	Approvals *approval.Service
	// OutputDir receives the full output of commands whose output was
	// truncated for the model (HERMES_HOME/cache/terminal). "" keeps no file.
	OutputDir string
	// Timeout is terminal.timeout; 0 means 180 s.
	Timeout time.Duration
	// MaxTimeout caps foreground timeouts; 0 means 600 s.
	MaxTimeout time.Duration
	// Secrets are values redacted from output (the scrubbed env values).
	Secrets []string
	// Charset is the charset of the environment's locale (LocaleCharset of
	// its LANG/LC_ALL; "" = UTF-8 or unknown). Output that is not UTF-8 is
	// decoded from the charset the command sets for itself, else from this
	// one, else its invalid bytes are shown as \xNN.
	Charset string
	// Processes records background processes for the process tool.
	Processes *ProcessTable
	// Protected are terminal.protected_paths: a failed command that ran
	// into them gets a note saying why and how to change it.
	Protected protect.Set
}

// TerminalTool is the `terminal` tool (toolset terminal).
type TerminalTool struct{ opts TerminalOptions }

// NewTerminalTool returns the terminal tool. A nil opts.Processes gets a
// fresh table (background processes are then invisible to a process tool).
func NewTerminalTool(opts TerminalOptions) *TerminalTool {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTerminalTimeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = MaxForegroundTimeout
	}
	if opts.Processes == nil {
		opts.Processes = NewProcessTable()
	}
	return &TerminalTool{opts: opts}
}

// Toolset is "terminal".
func (t *TerminalTool) Toolset() string { return "terminal" }

// Parallel is false: commands may depend on each other's side effects.
func (t *TerminalTool) Parallel() bool { return false }

// Spec describes the tool.
func (t *TerminalTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "terminal",
		Description: "Run a shell command (bash) in the task's working directory and return its combined stdout/stderr and exit code. " +
			"Output over 50,000 characters is cut in the middle; the full output is saved to a file named in the result. " +
			"Use background: true for servers and long jobs, then the process tool to poll, read logs, wait, write to stdin or kill; " +
			"background processes belong to this hermes run: they are ended when it exits or is killed, and a resumed session does not get them back. " +
			"Dangerous commands may need the user's approval; some never run.",
		Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The shell command to run."},
    "timeout": {"type": "integer", "description": "Seconds before the command and its children are killed (default %d, at most %d for foreground commands)."},
    "workdir": {"type": "string", "description": "Directory to run in, absolute or relative to the working directory."},
    "background": {"type": "boolean", "description": "Start the command in the background and return a process id at once."}
  },
  "required": ["command"]
}`, int(t.opts.Timeout.Seconds()), int(t.opts.MaxTimeout.Seconds()))),
	}
}

type terminalArgs struct {
	Command    string   `json:"command"`
	Timeout    *float64 `json:"timeout"`
	Workdir    string   `json:"workdir"`
	Background bool     `json:"background"`
}

// terminalResult is the JSON the model sees (Hermes returns output,
// exit_code and error).
type terminalResult struct {
	Output         string `json:"output"`
	ExitCode       int    `json:"exit_code"`
	Signal         string `json:"signal,omitempty"`
	Error          string `json:"error,omitempty"`
	Truncated      bool   `json:"truncated,omitempty"`
	FullOutputPath string `json:"full_output_path,omitempty"`
	Note           string `json:"note,omitempty"`
}

// Run executes one command.
func (t *TerminalTool) Run(ctx context.Context, call Call) Result {
	var args terminalArgs
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	if strings.TrimSpace(args.Command) == "" {
		return Errorf("terminal: command is required, e.g. {\"command\": \"ls -la\"}")
	}
	timeout := t.opts.Timeout
	var note string
	if args.Timeout != nil {
		if *args.Timeout <= 0 {
			return Errorf("terminal: timeout must be a positive number of seconds, got %v", *args.Timeout)
		}
		timeout = time.Duration(*args.Timeout * float64(time.Second))
	}
	if !args.Background && timeout > t.opts.MaxTimeout {
		note = fmt.Sprintf("timeout %s capped to %s for a foreground command; use background: true for longer work", timeout, t.opts.MaxTimeout)
		timeout = t.opts.MaxTimeout
	}
	if t.opts.Approvals != nil {
		d, err := t.opts.Approvals.Request(ctx, approval.Request{SessionID: call.SessionID, Command: args.Command, Workdir: args.Workdir})
		if err != nil {
			return Errorf("terminal: command not run: %v", err)
		}
		if !d.Allowed {
			return Errorf("terminal: command not run: %s", d.Reason)
		}
		if d.Warning != "" {
			note = strings.TrimPrefix(note+"; "+d.Warning, "; ")
		}
	}
	env, err := t.opts.Backend.Open(ctx, call.SessionID)
	if err != nil {
		return Errorf("terminal: the %s backend is not available: %v", t.opts.Backend.Kind(), err)
	}
	if args.Background {
		return t.startBackground(ctx, env, call.SessionID, args)
	}

	tap := &outputTap{spill: newSpill(t.opts.OutputDir)}
	req := backend.ExecRequest{Command: args.Command, Workdir: args.Workdir, Timeout: timeout, Output: tap, DiscardOutput: true}
	res, err := env.Exec(ctx, req)
	var rawPath string
	if tap.spill != nil {
		tap.spill.close()
		rawPath = tap.spill.f.Name()
		if tap.spillErr != nil {
			os.Remove(rawPath)
			rawPath = ""
		}
	}
	if err != nil {
		if rawPath != "" {
			os.Remove(rawPath)
		}
		if errors.Is(err, context.Canceled) {
			return Errorf("terminal: cancelled")
		}
		return Errorf("terminal: could not run the command: %v", err)
	}
	shown, truncated, fullPath := t.saveOutput(ctx, env, tap, rawPath, commandCharset(args.Command, t.opts.Charset))
	r := terminalResult{Output: shown, ExitCode: res.ExitCode, Signal: res.Signal, Truncated: truncated, FullOutputPath: fullPath, Note: note}
	r.Error = explainExit(res, timeout)
	if n := protectedNote(t.opts.Protected, res.ExitCode, shown); n != "" {
		r.Note = strings.TrimPrefix(r.Note+"; "+n, "; ")
	}
	return jsonResult(r)
}

// protectedNote explains a failure that looks like a write into a
// protected path (EROFS, or a protected name in the output of a failed
// command), or returns "".
func protectedNote(set protect.Set, exitCode int, output string) string {
	if set.Empty() || exitCode == 0 {
		return ""
	}
	hit := strings.Contains(output, "Read-only file system")
	for _, p := range set.Rel() {
		hit = hit || strings.Contains(output, p)
	}
	if !hit {
		return ""
	}
	return "writes to " + strings.Join(set.Paths(), ", ") + " fail here on purpose: " + protect.Hint
}

// saveOutput returns the output for the model, whether it was cut, and
// where the whole output is when it was: the spill file at rawPath,
// redacted and moved where the model can read it. A spill file that is not
// needed or cannot be saved is removed.
func (t *TerminalTool) saveOutput(ctx context.Context, env backend.Environment, tap *outputTap, rawPath, charset string) (string, bool, string) {
	var fullPath string
	if rawPath != "" {
		fullPath = spillPath(t.opts.Backend.Kind(), rawPath)
	}
	shown, truncated := tap.shown(charset, t.opts.Secrets, fullPath)
	if rawPath == "" {
		return shown, truncated, ""
	}
	if !truncated {
		os.Remove(rawPath)
		return shown, false, ""
	}
	err := saveRedacted(rawPath, charset, t.opts.Secrets)
	if err == nil {
		err = moveSpill(ctx, env, rawPath, fullPath)
	}
	if err != nil {
		os.Remove(rawPath)
		shown, _ = tap.shown(charset, t.opts.Secrets, "")
		return shown, true, ""
	}
	return shown, true, fullPath
}

func (t *TerminalTool) startBackground(ctx context.Context, env backend.Environment, sessionID string, args terminalArgs) Result {
	req := backend.ExecRequest{Command: args.Command, Workdir: args.Workdir}
	if args.Timeout != nil {
		req.Timeout = time.Duration(*args.Timeout * float64(time.Second))
	}
	p, err := env.Start(ctx, req)
	if err != nil {
		return Errorf("terminal: could not start the command: %v", err)
	}
	id := t.opts.Processes.add(sessionID, args.Command, args.Workdir, p)
	return jsonResult(map[string]any{
		"process_id": id,
		"pid":        p.PID(),
		"status":     "running",
		"note":       "started in the background; use the process tool with id " + id + " (actions: poll, log, wait, write, kill); it ends when this hermes run ends",
	})
}

// signalMeanings explains common signal deaths.
var signalMeanings = map[string]string{
	"SIGKILL": "killed by SIGKILL (possibly out of memory)",
	"SIGSEGV": "killed by SIGSEGV (segmentation fault: the program crashed)",
	"SIGABRT": "killed by SIGABRT (the program aborted itself)",
	"SIGTERM": "killed by SIGTERM (terminated)",
	"SIGINT":  "killed by SIGINT (interrupted)",
	"SIGPIPE": "killed by SIGPIPE (wrote to a closed pipe)",
	"SIGBUS":  "killed by SIGBUS (bad memory access)",
	"SIGFPE":  "killed by SIGFPE (arithmetic error such as division by zero)",
	"SIGHUP":  "killed by SIGHUP (hang-up)",
}

// signalByNumber maps 128+N exit codes of a shell back to signal names.
var signalByNumber = map[int]string{1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}

// explainExit says in words why a command ended unsuccessfully; "" for exit 0.
func explainExit(res backend.ExecResult, timeout time.Duration) string {
	switch {
	case res.TimedOut:
		return fmt.Sprintf("timed out after %s; the command and its child processes were killed. Use a larger timeout or background: true for long-running commands", formatSeconds(timeout))
	case res.OOMKilled:
		return "killed by the kernel OOM killer (out of memory)"
	case res.Signal != "":
		if m, ok := signalMeanings[res.Signal]; ok {
			return m
		}
		return "killed by " + res.Signal
	case res.ExitCode == 0:
		return ""
	case res.ExitCode == 126:
		return "exit code 126: the command was found but could not be executed (permission denied or not a program)"
	case res.ExitCode == 127:
		return "exit code 127: command not found"
	case res.ExitCode > 128 && res.ExitCode < 160:
		if name, ok := signalByNumber[res.ExitCode-128]; ok {
			return fmt.Sprintf("exit code %d: a process was %s", res.ExitCode, signalMeanings[name])
		}
	}
	return fmt.Sprintf("exit code %d", res.ExitCode)
}

func formatSeconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return d.String()
}
