package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// Conn sends and receives frames on one connection. A frame is its length
// in bytes (an unsigned varint) followed by one Request or Response
// (codec.go). Send may be called from several goroutines; Receive from one.
type Conn struct {
	wmu sync.Mutex
	w   io.Writer
	r   *bufio.Reader
	max uint64
	c   io.Closer
}

// MaxFrame bounds a frame on the host's connection to its own init, which
// sends a file read from the box (OpReadFile) in one frame: encoding/gob's
// bound on 64-bit machines, which this protocol used before Version 2.
const MaxFrame = 8 << 30

// NewConn is a Conn on rw for frames of at most MaxFrame bytes.
func NewConn(rw io.ReadWriteCloser) *Conn { return NewLimitedConn(rw, MaxFrame) }

// NewLimitedConn is NewConn for a peer that is not trusted with memory:
// Receive refuses a frame over max bytes with ErrFrameTooBig before it
// allocates anything for it. The init reads attached connections so
// (MaxAttachFrame).
func NewLimitedConn(rw io.ReadWriteCloser, max uint64) *Conn {
	return &Conn{w: rw, r: bufio.NewReader(rw), max: max, c: rw}
}

// ErrFrameTooBig ends a connection whose peer sent a frame over the
// limit (an attached connection: MaxAttachFrame).
var ErrFrameTooBig = errors.New("frame too big")

// Send writes v, a Request or Response (or a pointer to one), as one
// frame.
func (f *Conn) Send(v any) error {
	var e encoder
	e.b = make([]byte, binary.MaxVarintLen64, binary.MaxVarintLen64+256+dataLen(v))
	switch m := v.(type) {
	case Request:
		encodeRequest(&e, &m)
	case *Request:
		encodeRequest(&e, m)
	case Response:
		encodeResponse(&e, &m)
	case *Response:
		encodeResponse(&e, m)
	default:
		return fmt.Errorf("wire: cannot send a %T", v)
	}
	// The length goes in front of the body, in the room left for it.
	body := len(e.b) - binary.MaxVarintLen64
	n := protowire.SizeVarint(uint64(body))
	start := binary.MaxVarintLen64 - n
	protowire.AppendVarint(e.b[start:start], uint64(body))
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, err := f.w.Write(e.b[start:])
	return err
}

// dataLen is the length of v's Data (output, file contents): most of its
// frame, sized for in one allocation.
func dataLen(v any) int {
	switch m := v.(type) {
	case Request:
		return len(m.Data)
	case *Request:
		return len(m.Data)
	case Response:
		return len(m.Data)
	case *Response:
		return len(m.Data)
	}
	return 0
}

// Receive reads the next frame into v, a *Request or *Response, which it
// sets afresh (fields the frame does not carry are zero). Data fields
// alias the frame's own buffer, which is not reused. It fails with
// ErrFrameTooBig for a frame over the Conn's limit and ErrBadFrame for
// one that is not of this protocol.
func (f *Conn) Receive(v any) error {
	n, err := readLength(f.r)
	if err != nil {
		return err
	}
	if n > f.max {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrFrameTooBig, n, f.max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(f.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	switch m := v.(type) {
	case *Request:
		*m = Request{}
		return decodeRequest(buf, m)
	case *Response:
		*m = Response{}
		return decodeResponse(buf, m)
	}
	return fmt.Errorf("wire: cannot receive into a %T", v)
}

// readLength reads a frame's length, an unsigned varint of at most 10
// bytes: io.EOF when the stream ends before it, io.ErrUnexpectedEOF
// within it, ErrBadFrame past 64 bits.
func readLength(r io.ByteReader) (uint64, error) {
	var x uint64
	for i := range binary.MaxVarintLen64 {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			break
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return x, nil
		}
	}
	return 0, fmt.Errorf("%w: a frame length over 64 bits", ErrBadFrame)
}

// Close closes the underlying connection.
func (f *Conn) Close() error { return f.c.Close() }
