package local

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// supervisorScript is the supervisor: a /bin/sh process (tiny next to a
// second hermes) that outlives a killed hermes and ends the process
// groups of its commands. It reads lines "+ PGID" (a group started) and
// "- PGID" (a group finished) on stdin; at end of file (hermes exited or
// was killed: the kernel closes its end of the pipe) it sends SIGKILL to
// every group still registered. It ignores the terminal's signals so that
// a Ctrl-C or hang-up that kills hermes does not kill it first.
const supervisorScript = `trap '' INT HUP TERM QUIT PIPE
live=" "
while read -r op pg; do
  case $op in
    +) live="$live$pg " ;;
    -) case $live in *" $pg "*) live="${live%% $pg *} ${live#* $pg }" ;; esac ;;
  esac
done
for pg in $live; do kill -KILL -$pg 2>/dev/null; done`

// supervisor is hermes's side of the supervisor: the pipe to its stdin.
// When it is not running (not wanted, or failed to start) nothing is
// registered; the commands then still die with hermes through their
// parent-death signal, but what they started may not.
type supervisor struct {
	shell string // "" = no supervisor
	once  sync.Once
	ready chan struct{} // closed once start has finished
	mu    sync.Mutex
	w     io.WriteCloser // nil when the supervisor is not running
	cmd   *exec.Cmd
	err   error
}

// newSupervisor returns a supervisor run by shell ("" = none), not started.
func newSupervisor(shell string) *supervisor {
	return &supervisor{shell: shell, ready: make(chan struct{})}
}

// start starts the supervisor in the background, once; later calls do
// nothing. Registrations wait until it has started.
func (s *supervisor) start() {
	s.once.Do(func() {
		if s.shell == "" {
			close(s.ready)
			return
		}
		go s.run()
	})
}

func (s *supervisor) run() {
	defer close(s.ready)
	cmd := exec.Command(s.shell, "-c", supervisorScript)
	cmd.Env = []string{"PATH=/usr/bin:/bin"} // nothing of hermes's environment
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = fmt.Errorf("starting the local backend supervisor: %w", err)
		return
	}
	s.w, s.cmd = w, cmd
}

// send writes one protocol line; failures only lose the protection.
func (s *supervisor) send(op byte, pgid int) {
	if s == nil {
		return
	}
	s.start()
	<-s.ready
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		_, _ = io.WriteString(s.w, string(op)+" "+strconv.Itoa(pgid)+"\n")
	}
}

// add registers a started process group.
func (s *supervisor) add(pgid int) { s.send('+', pgid) }

// remove unregisters a finished process group.
func (s *supervisor) remove(pgid int) { s.send('-', pgid) }

// stop closes the pipe: the supervisor kills what is still registered
// and exits. stop does not wait for that; a goroutine reaps it.
func (s *supervisor) stop() error {
	if s == nil {
		return nil
	}
	s.once.Do(func() { close(s.ready) }) // never started: nothing to stop
	<-s.ready
	s.mu.Lock()
	w, cmd := s.w, s.cmd
	s.w, s.cmd = nil, nil
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	err := w.Close()
	go func() { _ = cmd.Wait() }()
	return err
}
