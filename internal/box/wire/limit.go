package wire

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
)

// NewLimitedConn is NewConn for a peer that is not trusted with memory:
// it decodes no frame over max bytes (FrameLimiter); Receive then fails
// with ErrFrameTooBig. The init reads attached connections so
// (MaxAttachFrame).
func NewLimitedConn(rw io.ReadWriteCloser, max uint64) *Conn {
	return &Conn{enc: gob.NewEncoder(rw), dec: gob.NewDecoder(NewFrameLimiter(rw, max)), c: rw}
}

// FrameLimiter passes a gob stream through, refusing any message longer
// than max bytes before gob allocates room for it. A gob message is its
// length (gob's unsigned integer: one byte below 0x80, else a byte -n and
// n big-endian bytes) followed by that many bytes. It implements
// io.ByteReader so that gob reads it directly.
type FrameLimiter struct {
	r    *bufio.Reader
	max  uint64
	left uint64 // bytes of the current message (its length included) not yet read
}

// NewFrameLimiter reads the gob stream of r, refusing any message over
// max bytes (ErrFrameTooBig).
func NewFrameLimiter(r io.Reader, max uint64) *FrameLimiter {
	return &FrameLimiter{r: bufio.NewReader(r), max: max}
}

func (l *FrameLimiter) Read(p []byte) (int, error) {
	if l.left == 0 {
		if err := l.next(); err != nil {
			return 0, err
		}
	}
	if uint64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= uint64(n)
	return n, err
}

func (l *FrameLimiter) ReadByte() (byte, error) {
	var b [1]byte
	if _, err := io.ReadFull(l, b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// ErrFrameTooBig ends a connection whose peer sent a frame over the
// limit (an attached connection: MaxAttachFrame).
var ErrFrameTooBig = errors.New("frame too big")

func (l *FrameLimiter) next() error {
	b, err := l.r.Peek(1)
	if err != nil {
		return err
	}
	hdr, n := 1, uint64(b[0])
	if b[0] >= 0x80 {
		k := -int(int8(b[0]))
		if k < 1 || k > 8 {
			return fmt.Errorf("bad frame length byte %#x", b[0])
		}
		h, err := l.r.Peek(1 + k)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		n = 0
		for _, c := range h[1:] {
			n = n<<8 | uint64(c)
		}
		hdr = 1 + k
	}
	if n > l.max {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrFrameTooBig, n, l.max)
	}
	l.left = uint64(hdr) + n
	return nil
}
