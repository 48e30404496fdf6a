package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/llm"
)

// Process tool limits.
const (
	defaultWaitTimeout = 180 * time.Second
	maxWaitTimeout     = 600 * time.Second
	defaultLogLimit    = 200
	pollTailChars      = 4000
)

// ProcessTool is the `process` tool (Hermes process_manage; the registry
// resolves the alias): it lists, polls, reads, waits for, writes to and
// kills the background processes the terminal tool started in the session.
type ProcessTool struct {
	table     *ProcessTable
	secrets   []string
	approvals *approval.Service
}

// NewProcessTool returns the process tool over table (the same table given
// to NewTerminalTool). secrets are redacted from output. approvals checks
// the data of every write as a command typed into the process (nil writes
// unchecked: only for tests and trusted embedders).
func NewProcessTool(table *ProcessTable, secrets []string, approvals *approval.Service) *ProcessTool {
	return &ProcessTool{table: table, secrets: secrets, approvals: approvals}
}

// Toolset is "terminal".
func (p *ProcessTool) Toolset() string { return "terminal" }

// Parallel is false: kill and write change process state.
func (p *ProcessTool) Parallel() bool { return false }

// Spec describes the tool.
func (p *ProcessTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        "process",
		Description: "Manage background processes started with terminal background: true. Actions: list (all processes of this session), poll (status and new output), log (output lines, with offset/limit), wait (until exit or timeout seconds), kill, write (send data to stdin).",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["list", "poll", "log", "wait", "kill", "write"]},
    "session_id": {"type": "string", "description": "Process id returned by terminal (e.g. proc_1); also accepted as id."},
    "data": {"type": "string", "description": "Text to write to stdin (action write); add \n to submit a line."},
    "timeout": {"type": "integer", "description": "Seconds to wait (action wait, default 180, at most 600)."},
    "offset": {"type": "integer", "description": "First output line to show (action log, 1-based; negative counts from the end)."},
    "limit": {"type": "integer", "description": "Number of output lines (action log, default 200)."}
  },
  "required": ["action"]
}`),
	}
}

type processArgs struct {
	Action    string   `json:"action"`
	SessionID string   `json:"session_id"`
	ID        string   `json:"id"`
	Data      *string  `json:"data"`
	Timeout   *float64 `json:"timeout"`
	Offset    int      `json:"offset"`
	Limit     int      `json:"limit"`
}

// Run performs one action.
func (p *ProcessTool) Run(ctx context.Context, call Call) Result {
	var args processArgs
	if err := Decode(call.Args, &args); err != nil {
		return Errorf("%v", err)
	}
	action := strings.ToLower(strings.TrimSpace(args.Action))
	if action == "list" {
		return p.list(call.SessionID)
	}
	if !slices.Contains([]string{"poll", "log", "wait", "kill", "write"}, action) {
		return Errorf("process: unknown action %q; use one of list, poll, log, wait, kill, write", args.Action)
	}
	id := args.SessionID
	if id == "" {
		id = args.ID
	}
	if id == "" {
		return Errorf("process: %s needs session_id, the process id that terminal returned (e.g. proc_1); use action list to see them", action)
	}
	e := p.table.get(call.SessionID, id)
	if e == nil {
		return Errorf("process: no background process %q in this session; use action list to see them", id)
	}
	switch action {
	case "poll":
		return p.poll(e)
	case "log":
		return p.log(e, args.Offset, args.Limit)
	case "wait":
		timeout := defaultWaitTimeout
		if args.Timeout != nil {
			if *args.Timeout <= 0 {
				return Errorf("process: timeout must be a positive number of seconds, got %v", *args.Timeout)
			}
			timeout = min(time.Duration(*args.Timeout*float64(time.Second)), maxWaitTimeout)
		}
		return p.wait(ctx, e, timeout)
	case "kill":
		if err := e.proc.Kill(); err != nil {
			return Errorf("process: kill %s: %v", id, err)
		}
		return p.status(e, "killed", true)
	default: // write
		if args.Data == nil {
			return Errorf("process: write needs data, the text to send to stdin")
		}
		e.writeMu.Lock()
		defer e.writeMu.Unlock()
		// The check sees the line the process will read: what earlier
		// writes left unfinished plus this data ("r" then "m -rf x\n").
		line := e.pending + *args.Data
		if len(line) > maxPendingLine {
			return Errorf("process: not written to %s: a line longer than %d bytes; end lines with \n", id, maxPendingLine)
		}
		if p.approvals != nil {
			d, err := p.approvals.Request(ctx, approval.Request{SessionID: call.SessionID, Command: line, Workdir: e.workdir, Target: e.command})
			if err != nil {
				return Errorf("process: not written: %v", err)
			}
			if !d.Allowed {
				return Errorf("process: not written to %s: %s", id, d.Reason)
			}
		}
		if _, err := e.proc.Write([]byte(*args.Data)); err != nil {
			return Errorf("process: write to %s: %v", id, err)
		}
		e.pending = unfinishedLine(line)
		return jsonResult(map[string]any{"session_id": id, "written_bytes": len(*args.Data), "status": statusWord(e.proc)})
	}
}

func statusWord(p backend.Process) string {
	if p.Done() {
		return "exited"
	}
	return "running"
}

func (p *ProcessTool) list(sessionID string) Result {
	type item struct {
		ID       string `json:"session_id"`
		Command  string `json:"command"`
		PID      int    `json:"pid"`
		Status   string `json:"status"`
		ExitCode *int   `json:"exit_code,omitempty"`
		Uptime   string `json:"uptime"`
	}
	items := []item{}
	for _, e := range p.table.list(sessionID) {
		it := item{ID: e.id, Command: e.command, PID: e.proc.PID(), Status: statusWord(e.proc), Uptime: time.Since(e.started).Round(time.Second).String()}
		if e.proc.Done() {
			res, _ := e.proc.Wait(context.Background())
			it.ExitCode = &res.ExitCode
		}
		items = append(items, it)
	}
	return jsonResult(map[string]any{"processes": items})
}

// poll returns the status and the output produced since the last poll
// (at most the last 4000 characters of it).
func (p *ProcessTool) poll(e *processEntry) Result {
	out := e.proc.Output()
	p.table.mu.Lock()
	start := min(e.logRead, len(out))
	e.logRead = len(out)
	p.table.mu.Unlock()
	text := cleanOutput(out[start:], "", p.secrets)
	if n := len([]rune(text)); n > pollTailChars {
		text = fmt.Sprintf("[... %d earlier characters; use action log to read them ...]\n", n-pollTailChars) + string([]rune(text)[n-pollTailChars:])
	}
	r := map[string]any{"session_id": e.id, "status": statusWord(e.proc), "new_output": text}
	if e.proc.Done() {
		res, _ := e.proc.Wait(context.Background())
		r["exit_code"] = res.ExitCode
		if msg := explainExit(res, 0); msg != "" && !res.TimedOut {
			r["error"] = msg
		}
	}
	return jsonResult(r)
}

// log returns output lines [offset, offset+limit).
func (p *ProcessTool) log(e *processEntry, offset, limit int) Result {
	if limit <= 0 {
		limit = defaultLogLimit
	}
	text := cleanOutput(e.proc.Output(), "", p.secrets)
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	start := offset - 1
	if offset < 0 {
		start = max(0, total+offset)
	} else if offset == 0 {
		start = max(0, total-limit) // default: the last lines
	}
	if start > total {
		return Errorf("process: offset %d is past the end of the output (%d lines)", offset, total)
	}
	end := min(total, start+limit)
	shown, _ := capOutput(strings.Join(lines[start:end], ""), MaxOutputChars, "")
	return jsonResult(map[string]any{
		"session_id": e.id, "status": statusWord(e.proc), "total_lines": total,
		"showing": fmt.Sprintf("lines %d-%d of %d", min(start+1, end), end, total), "output": shown,
	})
}

func (p *ProcessTool) wait(ctx context.Context, e *processEntry, timeout time.Duration) Result {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := e.proc.Wait(wctx)
	if err != nil && ctx.Err() != nil {
		return Errorf("process: wait cancelled")
	}
	if err != nil {
		r := p.status(e, "", false)
		return Result{Content: r.Content + "\n(still running after " + formatSeconds(timeout) + "; wait again, poll later, or kill it)"}
	}
	return p.status(e, "", true)
}

// status reports the process state with the tail of its output.
func (p *ProcessTool) status(e *processEntry, verb string, withOutput bool) Result {
	r := map[string]any{"session_id": e.id, "status": statusWord(e.proc)}
	if verb != "" {
		r["action"] = verb
	}
	if e.proc.Done() {
		res, _ := e.proc.Wait(context.Background())
		r["exit_code"] = res.ExitCode
		if res.Signal != "" {
			r["signal"] = res.Signal
		}
		if msg := explainExit(res, 0); msg != "" && !res.TimedOut {
			r["error"] = msg
		} else if res.TimedOut {
			r["error"] = "the process's timeout expired and it was killed"
		}
	}
	if withOutput {
		out, _ := capOutput(cleanOutput(e.proc.Output(), "", p.secrets), MaxOutputChars, "")
		r["output"] = out
	}
	return jsonResult(r)
}

// tool, by id ("proc_1", "proc_2", ...). Each process belongs to the
// session that started it and is only visible to that session. Safe for
// concurrent use.
type ProcessTable struct {
	mu    sync.Mutex
	next  int
	procs map[string]*processEntry
}

type processEntry struct {
	id        string
	sessionID string
	command   string
	workdir   string // the terminal workdir argument it started in
	started   time.Time
	proc      backend.Process
	logRead   int // bytes of output already returned by poll

	writeMu sync.Mutex // one write (check, then send) at a time
	pending string     // written text after the last line end, not yet run
}

// maxPendingLine bounds the unfinished line process write keeps to check
// together with the next write.
const maxPendingLine = 64 << 10

// unfinishedLine returns the text after the last line end of s: a newline
// not continued by a backslash before it (so "r\\\n" stays unfinished).
func unfinishedLine(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != '\n' {
			continue
		}
		n := 0
		for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return s[i+1:]
		}
	}
	return s
}

// NewProcessTable returns an empty table.
func NewProcessTable() *ProcessTable {
	return &ProcessTable{procs: map[string]*processEntry{}}
}

func (t *ProcessTable) add(sessionID, command, workdir string, p backend.Process) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	id := "proc_" + strconv.Itoa(t.next)
	t.procs[id] = &processEntry{id: id, sessionID: sessionID, command: command, workdir: workdir, started: time.Now(), proc: p}
	return id
}

func (t *ProcessTable) get(sessionID, id string) *processEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.procs[id]
	if e == nil || e.sessionID != sessionID {
		return nil
	}
	return e
}

func (t *ProcessTable) list(sessionID string) []*processEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*processEntry
	for _, e := range t.procs {
		if e.sessionID == sessionID {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *processEntry) int {
		ai, _ := strconv.Atoi(a.id[len("proc_"):])
		bi, _ := strconv.Atoi(b.id[len("proc_"):])
		return ai - bi
	})
	return out
}

// KillSession kills every running process of sessionID (when the session
// ends).
func (t *ProcessTable) KillSession(sessionID string) {
	for _, e := range t.list(sessionID) {
		_ = e.proc.Kill()
	}
}
