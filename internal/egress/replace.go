package egress

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// replacement is one literal substitution.
type replacement struct{ old, new string }

// replaceString applies every replacement to s (leftmost match first; at
// one position the longest old wins).
func replaceString(s string, reps []replacement) string {
	if len(reps) == 0 {
		return s
	}
	args := make([]string, 0, 2*len(reps))
	for _, r := range reps {
		args = append(args, r.old, r.new)
	}
	return strings.NewReplacer(args...).Replace(s)
}

// replacingReader is a streaming literal replacer: it emits everything it
// has read except a tail that could still be the start of a match, so a
// streamed response (SSE) is delayed only while it looks like a secret.
type replacingReader struct {
	src     io.Reader
	reps    []replacement
	in, out []byte
	buf     []byte
	srcErr  error
	hitsMu  sync.Mutex      // the reader may run on a transport goroutine
	hits    map[string]bool // old strings replaced at least once
}

func newReplacingReader(src io.Reader, reps []replacement) *replacingReader {
	return &replacingReader{src: src, reps: reps, buf: make([]byte, 32<<10), hits: map[string]bool{}}
}

func (r *replacingReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.srcErr != nil && len(r.in) == 0 {
			return 0, r.srcErr
		}
		if r.srcErr == nil {
			n, err := r.src.Read(r.buf)
			r.in = append(r.in, r.buf[:n]...)
			r.srcErr = err
			if n == 0 && err == nil {
				continue
			}
		}
		r.process(r.srcErr != nil)
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// process moves r.in to r.out, replacing matches; unless final it keeps the
// longest tail of r.in that is a proper prefix of some old string.
func (r *replacingReader) process(final bool) {
	safe := len(r.in)
	if !final {
		safe -= r.pendingTail()
	}
	i := 0
	for i < safe {
		j, rep := r.nextMatch(r.in[i:])
		if j < 0 || i+j >= safe {
			r.out = append(r.out, r.in[i:safe]...)
			i = safe
			break
		}
		r.out = append(r.out, r.in[i:i+j]...)
		r.out = append(r.out, rep.new...)
		r.hitsMu.Lock()
		r.hits[rep.old] = true
		r.hitsMu.Unlock()
		i += j + len(rep.old)
	}
	r.in = append(r.in[:0], r.in[i:]...)
}

// nextMatch finds the leftmost (then longest) match in b.
func (r *replacingReader) nextMatch(b []byte) (int, replacement) {
	best, bestRep := -1, replacement{}
	for _, rep := range r.reps {
		j := bytes.Index(b, []byte(rep.old))
		if j < 0 {
			continue
		}
		if best < 0 || j < best || j == best && len(rep.old) > len(bestRep.old) {
			best, bestRep = j, rep
		}
	}
	return best, bestRep
}

// pendingTail is the length of the longest suffix of r.in that is a proper
// prefix of an old string (it may complete with the next read).
func (r *replacingReader) pendingTail() int {
	tail := 0
	for _, rep := range r.reps {
		for k := min(len(rep.old)-1, len(r.in)); k > tail; k-- {
			if bytes.HasSuffix(r.in, []byte(rep.old[:k])) {
				tail = k
				break
			}
		}
	}
	return tail
}

// replacedAny reports whether old was replaced at least once so far.
func (r *replacingReader) replacedAny(old string) bool {
	r.hitsMu.Lock()
	defer r.hitsMu.Unlock()
	return r.hits[old]
}

func (r *replacingReader) Close() error {
	if c, ok := r.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
