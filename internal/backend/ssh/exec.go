package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"

	"github.com/hermes-go/hermes/internal/backend/shellexec"
)

// transport starts each program in its own SSH session.
type transport struct{ client *ssh.Client }

type running struct {
	s     *ssh.Session
	stdin io.WriteCloser
}

// Start runs script in a new session (sshd runs it with the user's shell
// -c, as the session leader of its own process group).
func (t transport) Start(_ context.Context, script string, stdin io.Reader, pipe bool, stdout, stderr io.Writer) (shellexec.Running, error) {
	s, err := t.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("ssh session: %w", err)
	}
	r := &running{s: s}
	s.Stdout, s.Stderr = stdout, stderr
	switch {
	case stdin != nil:
		s.Stdin = stdin
	case pipe:
		if r.stdin, err = s.StdinPipe(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.Start(script); err != nil {
		s.Close()
		return nil, fmt.Errorf("ssh: %w", err)
	}
	return r, nil
}

func (r *running) Stdin() io.WriteCloser { return r.stdin }

// Wait maps OpenSSH's exit-status and exit-signal to an exit code or a
// signal name.
func (r *running) Wait() (int, string, error) {
	defer r.s.Close()
	err := r.s.Wait()
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		return 0, "", nil
	case errors.As(err, &exit) && exit.Signal() != "":
		return -1, "SIG" + exit.Signal(), nil
	case errors.As(err, &exit):
		return exit.ExitStatus(), "", nil
	case errors.As(err, &missing):
		return -1, "", nil
	}
	return -1, "", fmt.Errorf("ssh: %w", err)
}

func (r *running) Abandon() { r.s.Close() }
