package sandboxserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// File transfers (envd GET and POST /files) stream between the client and
// the box: a download is cat in the box writing into the response, an
// upload is the request body fed to the stdin of a command in the box
// that writes a temporary file and renames it into place. Neither holds a
// file in memory: each transfer copies through one buffer of the server's
// transfer budget (backpressure both ways: the box's stdin window, the
// client's TCP window).

// transferChunk is the size of one buffer of the transfer budget.
const transferChunk = 128 << 10

// transferBudget is the server-wide budget of bytes in flight in file
// transfers: a fixed number of buffers of transferChunk bytes. A transfer
// holds one buffer while it copies; when none is free it waits for one
// (or for its client to go away).
type transferBudget struct {
	free chan []byte
}

// newTransferBudget returns a budget of total bytes (at least one buffer).
// The buffers are made when first taken.
func newTransferBudget(total int64) *transferBudget {
	n := max(int(total/transferChunk), 1)
	b := &transferBudget{free: make(chan []byte, n)}
	for range n {
		b.free <- nil
	}
	return b
}

// take waits for a free buffer.
func (b *transferBudget) take(ctx context.Context) ([]byte, error) {
	select {
	case buf := <-b.free:
		if buf == nil {
			buf = make([]byte, transferChunk)
		}
		return buf, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// give returns a buffer taken from b.
func (b *transferBudget) give(buf []byte) { b.free <- buf }

// fileStreamer is an environment that copies files to and from streams
// itself (the unit tests' in-memory boxes); a box's files stream through
// commands in it (boxFiles).
type fileStreamer interface {
	// ReadFileTo writes the file at path to w.
	ReadFileTo(ctx context.Context, path string, w io.Writer) error
	// WriteFileFrom replaces path atomically with what r reads to its
	// end, creating parent directories; on an error from r nothing is
	// replaced.
	WriteFileFrom(ctx context.Context, path string, r io.Reader, perm fs.FileMode) error
}

// streamerOf returns the streaming file operations of env.
func streamerOf(env backend.Environment) fileStreamer {
	if fs, ok := env.(fileStreamer); ok {
		return fs
	}
	return boxFiles{env: env}
}

// boxFiles streams files through commands in a box.
type boxFiles struct{ env backend.Environment }

// stderrTail keeps the first 4 KiB of a command's error output.
type stderrTail struct{ b []byte }

func (t *stderrTail) Write(p []byte) (int, error) {
	t.b = append(t.b, p[:min(len(p), 4096-len(t.b))]...)
	return len(p), nil
}

// commandError is the error of a file command that failed: its message,
// wrapping the fs error its words name (for fileStatus).
func commandError(op, p string, res backend.ExecResult, stderr []byte) error {
	msg := strings.TrimSpace(string(stderr))
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", res.ExitCode)
	}
	var kind error = errors.ErrUnsupported
	switch {
	case strings.Contains(msg, "No such file"):
		kind = fs.ErrNotExist
	case strings.Contains(msg, "Permission denied"), strings.Contains(msg, "Read-only file system"):
		kind = fs.ErrPermission
	case strings.Contains(msg, "Is a directory"), strings.Contains(msg, "Not a directory"), strings.Contains(msg, "cannot overwrite directory"):
		kind = fs.ErrInvalid
	}
	return fmt.Errorf("%s %s: %s: %w", op, p, msg, kind)
}

// ReadFileTo runs cat in the box with its output going to w as it comes.
func (f boxFiles) ReadFileTo(ctx context.Context, p string, w io.Writer) error {
	var stderr stderrTail
	res, err := f.env.Exec(ctx, backend.ExecRequest{Command: `exec cat -- "$E2B_P"`, Env: map[string]string{"E2B_P": p},
		Workdir: "/", Output: w, DiscardOutput: true, Stderr: &stderr})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return commandError("read", p, res, stderr.b)
	}
	return nil
}

// uploadScript writes its stdin to $E2B_T (a new file beside $E2B_P) and
// renames it to $E2B_P at the end of the input: a failed upload leaves
// the file as it was.
const uploadScript = `set -e
mkdir -p -- "$(dirname -- "$E2B_P")"
cat > "$E2B_T"
chmod "$E2B_M" -- "$E2B_T"
mv -f -T -- "$E2B_T" "$E2B_P"`

// WriteFileFrom feeds r to uploadScript in the box; on an error from r
// the command is killed before its input ends and its temporary file
// removed.
func (f boxFiles) WriteFileFrom(ctx context.Context, p string, r io.Reader, perm fs.FileMode) error {
	dir, base := p[:strings.LastIndex(p, "/")+1], p[strings.LastIndex(p, "/")+1:]
	tmp := dir + ".e2b-upload-" + base + "-" + randomToken()[:16]
	vars := map[string]string{"E2B_P": p, "E2B_T": tmp, "E2B_M": fmt.Sprintf("%o", perm.Perm())}
	var stderr stderrTail
	proc, err := f.env.Start(ctx, backend.ExecRequest{Command: uploadScript, Env: vars, Workdir: "/",
		Output: &stderr, DiscardOutput: true, Stderr: &stderr})
	if err != nil {
		return err
	}
	_, copyErr := io.Copy(stdinOf{proc}, r)
	if copyErr != nil && !errors.As(copyErr, new(sourceError)) && proc.Done() {
		// The command ended before its input did (mkdir or cat failed):
		// its words say why.
		if res, err := proc.Wait(ctx); err == nil && res.ExitCode != 0 {
			copyErr = commandError("write", p, res, stderr.b)
		}
	}
	if copyErr != nil {
		proc.Kill()
		proc.Wait(context.WithoutCancel(ctx))
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		f.env.Exec(cleanup, backend.ExecRequest{Command: `rm -f -- "$E2B_T"`, Env: vars, Workdir: "/"})
		return copyErr
	}
	proc.CloseStdin()
	res, err := proc.Wait(ctx)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return commandError("write", p, res, stderr.b)
	}
	return nil
}

// stdinOf is a command's stdin as an io.Writer only (io.Copy then uses
// the reader's WriteTo or its buffer, see copyBuffered).
type stdinOf struct{ p backend.Process }

func (s stdinOf) Write(b []byte) (int, error) { return s.p.Write(b) }

// sourceError marks an error of the client's side of a transfer (its
// body), told apart from the box's.
type sourceError struct{ err error }

func (e sourceError) Error() string { return e.err.Error() }
func (e sourceError) Unwrap() error { return e.err }

// budgetReader reads a client's body through a buffer of the transfer
// budget, so that io.Copy makes no buffer of its own, and marks its
// errors as the client's.
type budgetReader struct {
	r   io.Reader
	buf []byte
}

// WriteTo copies the body to w one budget buffer at a time.
func (b budgetReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for {
		k, err := b.r.Read(b.buf)
		if k > 0 {
			if _, werr := w.Write(b.buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, sourceError{err}
		}
	}
}

func (b budgetReader) Read(p []byte) (int, error) { return b.r.Read(p) }

// responseStream is a download's response: headers are sent with the
// first byte (so that an error before it is still a status), bytes go out
// through a budget buffer, and each write must go out within idle (a
// client that stops reading ends the download instead of holding the box).
type responseStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	headers func()
	buf     []byte
	n       int
	idle    time.Duration
	started bool
	err     error
	cancel  context.CancelFunc // stops the command in the box on a failed write
}

func (s *responseStream) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if !s.started {
		s.headers()
		s.started = true
	}
	total := len(p)
	for len(p) > 0 {
		k := copy(s.buf[s.n:], p)
		s.n, p = s.n+k, p[k:]
		if s.n == len(s.buf) {
			if err := s.Flush(); err != nil {
				return 0, err
			}
		}
	}
	return total, nil
}

// Flush sends what the buffer holds.
func (s *responseStream) Flush() error {
	if s.err != nil || s.n == 0 {
		return s.err
	}
	s.rc.SetWriteDeadline(time.Now().Add(s.idle))
	if _, err := s.w.Write(s.buf[:s.n]); err != nil {
		s.err = err
		s.cancel()
		return err
	}
	s.n = 0
	return nil
}

// errTooLarge is an upload over the server's MaxUploadBytes.
var errTooLarge = errors.New("upload too large")

// capReader reads at most left bytes of r and fails with errTooLarge when
// r has more.
type capReader struct {
	r    io.Reader
	left *int64
}

func (c capReader) Read(p []byte) (int, error) {
	if *c.left <= 0 {
		var one [1]byte
		if n, err := c.r.Read(one[:]); n > 0 {
			return 0, errTooLarge
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > *c.left {
		p = p[:*c.left]
	}
	n, err := c.r.Read(p)
	*c.left -= int64(n)
	return n, err
}
