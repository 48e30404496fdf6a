package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
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

// MaxFileData bounds the data of a file read from the box (OpReadFile), which
// comes in one frame: the init refuses a larger file.
const MaxFileData = 1 << 30

// MaxFrame bounds a frame on a connection to an init: a file's data
// (MaxFileData) and room for the rest.
const MaxFrame = MaxFileData + 1<<20

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
// frame. Its Data (output, a file's contents) goes to the connection
// as it is, after the rest of the frame, not copied into it.
func (f *Conn) Send(v any) error {
	var e encoder
	e.b = make([]byte, binary.MaxVarintLen64, binary.MaxVarintLen64+256)
	var data []byte
	var dataField protowire.Number
	switch m := v.(type) {
	case *Request:
		return f.Send(*m)
	case *Response:
		return f.Send(*m)
	case Request: // a copy: its Data is cleared for the encoder, not the caller's
		data, dataField, m.Data = m.Data, reqData, nil
		encodeRequest(&e, &m)
	case Response:
		data, dataField, m.Data = m.Data, respData, nil
		encodeResponse(&e, &m)
	default:
		return fmt.Errorf("wire: cannot send a %T", v)
	}
	if len(data) > 0 {
		e.b = protowire.AppendTag(e.b, dataField, protowire.BytesType)
		e.b = protowire.AppendVarint(e.b, uint64(len(data)))
	}
	// The length goes in front of the body, in the room left for it.
	body := len(e.b) - binary.MaxVarintLen64 + len(data)
	n := protowire.SizeVarint(uint64(body))
	start := binary.MaxVarintLen64 - n
	protowire.AppendVarint(e.b[start:start], uint64(body))
	bufs := net.Buffers{e.b[start:]}
	if len(data) > 0 {
		bufs = append(bufs, data)
	}
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, err := bufs.WriteTo(f.w)
	return err
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
		return newDecoder(f.max).decodeRequest(buf, m)
	case *Response:
		*m = Response{}
		return newDecoder(f.max).decodeResponse(buf, m)
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
