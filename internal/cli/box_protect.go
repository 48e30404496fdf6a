package cli

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hermes-go/hermes/internal/protect"
)

// outputTail keeps the last max bytes written to it (a command's stdout
// and stderr, interleaved), for protect.Set.FailureNote; safe for
// concurrent writers.
type outputTail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *outputTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *outputTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// protectedOutputTailBytes bounds what box exec keeps of a command's
// output to look for a protected path in (64 KiB).
const protectedOutputTailBytes = 64 << 10

// noteProtectedFailure runs run with stdout and stderr teed into a
// bounded tail, and when the command failed (an *ExitError) with output
// that points at terminal.protected_paths, writes the same note the
// terminal tool gives the model to stderr, once, after the output.
func (a *App) noteProtectedFailure(set protect.Set, stdout, stderr io.Writer, run func(stdout, stderr io.Writer) error) error {
	if set.Empty() {
		return run(stdout, stderr)
	}
	tail := &outputTail{max: protectedOutputTailBytes}
	err := run(io.MultiWriter(stdout, tail), io.MultiWriter(stderr, tail))
	var ee *ExitError
	if errors.As(err, &ee) && ee.Code != 0 {
		if note := set.FailureNote(ee.Code, tail.String()); note != "" {
			fmt.Fprintln(a.Stderr, "hermes: "+note)
		}
	}
	return err
}
