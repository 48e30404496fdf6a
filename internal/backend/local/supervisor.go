package local

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

// SupervisorArg is the hidden first argument that makes the hermes binary
// run as the local backend's supervisor (SupervisorMain) instead of the
// CLI, as box.InitArg does for the box init.
const SupervisorArg = "local-supervisor"

// SupervisorMain is the supervisor: a small process that outlives a killed
// hermes and ends the process groups of its commands. It reads lines
// "+PGID" (a group started) and "-PGID" (a group finished) on stdin; when
// stdin reaches end of file (hermes exited or was killed: the kernel
// closes its end of the pipe) it sends SIGKILL to every group still
// registered and exits 0.
func SupervisorMain() int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGPIPE)
	live := superviseGroups(os.Stdin)
	for pgid := range live {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return 0
}

// superviseGroups reads the registration protocol until end of file and
// returns the groups still registered.
func superviseGroups(r io.Reader) map[int]bool {
	live := map[int]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			live[pgid] = true
		case '-':
			delete(live, pgid)
		}
	}
	return live
}

// supervisor is hermes's side of the supervisor: the pipe to its stdin.
// Its zero value (or a failed start) registers nothing; the commands then
// still die with hermes through their parent-death signal, but what they
// started may not.
type supervisor struct {
	exe   string
	once  sync.Once
	ready chan struct{} // closed once start has finished
	mu    sync.Mutex
	w     io.WriteCloser // nil when the supervisor is not running
	cmd   *exec.Cmd
	err   error
}

// newSupervisor returns the supervisor of exe ("" = none), not started.
func newSupervisor(exe string) *supervisor {
	return &supervisor{exe: exe, ready: make(chan struct{})}
}

// start starts the supervisor in the background, once; later calls do
// nothing. Registrations wait until it has started.
func (s *supervisor) start() {
	s.once.Do(func() {
		if s.exe == "" {
			close(s.ready)
			return
		}
		go s.run()
	})
}

func (s *supervisor) run() {
	defer close(s.ready)
	cmd := exec.Command(s.exe, SupervisorArg)
	cmd.Env = []string{} // nothing of hermes's environment
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = fmt.Errorf("starting the local backend supervisor %s: %w", s.exe, err)
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
		_, _ = io.WriteString(s.w, string(op)+strconv.Itoa(pgid)+"\n")
	}
}

// add registers a started process group.
func (s *supervisor) add(pgid int) { s.send('+', pgid) }

// remove unregisters a finished process group.
func (s *supervisor) remove(pgid int) { s.send('-', pgid) }

// stop closes the pipe: the supervisor kills what is still registered
// and exits. stop does not wait for that (the supervisor may still be
// starting); a goroutine reaps it.
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
