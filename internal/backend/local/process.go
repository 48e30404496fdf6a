package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Start runs req.Command in the background with `bash -c` in its own process
// group, confined like Exec, and returns at once. Background processes
// end with hermes in every case: Close kills them on a normal exit, and
// the supervisor kills their groups when hermes is killed. ctx only bounds the start; the process runs
// until it exits, req.Timeout (if set) expires, Kill is called or the
// environment is closed. Output (stdout and stderr, in order) is kept in a
// bounded buffer: the first 64 KiB and the last 1 MiB.
func (e *Environment) Start(ctx context.Context, req backend.ExecRequest) (backend.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd, err := e.command(req)
	if err != nil {
		return nil, err
	}
	out := backend.NewCapture(backgroundHeadMax, backgroundTailMax)
	var w io.Writer = out
	if req.Output != nil {
		w = io.MultiWriter(out, req.Output)
	}
	sink := &lockedWriter{w: w}
	cmd.Stdout, cmd.Stderr = sink, sink
	var stdin io.WriteCloser
	if req.Stdin != nil {
		if err := feedStdin(cmd, req.Stdin); err != nil {
			return nil, err
		}
	} else if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	cmd.WaitDelay = outputDrainDelay
	p := &process{Lifecycle: backend.NewLifecycle(out, stdin, time.Now()), cmd: cmd}
	release, err := e.startCmd(cmd)
	if err != nil {
		return nil, err
	}
	p.pid = cmd.Process.Pid
	if e.guard != nil && e.guard.pids != nil {
		p.pid = namespacePID(cmd.Process.Pid) // not reaped yet: its /proc entry is there
	}
	e.mu.Lock()
	e.procs[p] = true
	e.mu.Unlock()
	go p.wait(req.Timeout, func() {
		release()
		e.mu.Lock()
		delete(e.procs, p)
		e.mu.Unlock()
	})
	return p, nil
}

// process is a background command.
type process struct {
	*backend.Lifecycle // Kill ends the process group: SIGTERM, then SIGKILL after 2 s
	cmd                *exec.Cmd
	pid                int // as the commands see it (their PID namespace, pidns.go)
}

func (p *process) wait(timeout time.Duration, finished func()) {
	defer finished()
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	var timedOut bool
	var err error
	select {
	case err = <-waited:
	case <-expire:
		timedOut = true
		err = killGroup(p.cmd.Process.Pid, waited)
	case <-p.Killed():
		err = killGroup(p.cmd.Process.Pid, waited)
	}
	res := result(p.cmd.ProcessState, err)
	res.TimedOut = timedOut
	p.Finish(res)
}

// PID is the process id of the shell as commands see it (`kill PID` in a
// later command reaches it): in the commands' PID namespace as root
// (pidns.go), else the host's, which is also its process group id.
func (p *process) PID() int { return p.pid }

// namespacePID returns the innermost pid of host process pid (the last
// NSpid field of /proc/PID/status), or pid when it cannot be read.
func namespacePID(pid int) int {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return pid
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if n, err := strconv.Atoi(f[len(f)-1]); err == nil {
					return n
				}
			}
		}
	}
	return pid
}

// feedStdin gives cmd r as its standard input. An *os.File is passed as
// it is; any other reader is copied into a pipe by a goroutine of its own,
// which cmd.Wait does not wait for: os/exec's own copy would make Wait
// wait, WaitDelay or not, until r's Read returned, and a reader that
// blocks (an MCP client's io.Pipe, whose writer stays open) kept Wait,
// and who waits for the process, from seeing it exit: a session's MCP
// server whose command failed was noticed only at its connect timeout
// (60 s, TestMCPEnvSecretNeverStored). The goroutine ends when r does, or
// at its first write once the process has exited.
func feedStdin(cmd *exec.Cmd, r io.Reader) error {
	if f, ok := r.(*os.File); ok {
		cmd.Stdin = f
		return nil
	}
	w, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("stdin pipe: %w", err)
	}
	go func() {
		io.Copy(w, r)
		w.Close()
	}()
	return nil
}
