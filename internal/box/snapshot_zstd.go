package box

import (
	"encoding/binary"
	"io"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// snapshotRawBlockSize is the largest raw zstd block we emit (128 KiB,
// the format's Block_Maximum_Size, RFC 8878 §3.1.1.2.4).
const snapshotRawBlockSize = 128 << 10

// snapshotRawFrameHeader starts a zstd frame (RFC 8878 §3.1.1): the magic
// number 0xFD2FB528, a Frame_Header_Descriptor of 0 (no content size, no
// checksum, no dictionary, not single-segment) and a Window_Descriptor of
// 0x38 (exponent 7: a 128 KiB window, enough for 128 KiB raw blocks).
const snapshotRawFrameHeader = "\x28\xb5\x2f\xfd\x00\x38"

// snapshotZstdWriter writes one zstd stream as a sequence of frames (RFC
// 8878 §3.1: a stream may hold several frames, and decoders join them):
// compressed frames from a klauspost encoder, and, between SetRaw(true)
// and SetRaw(false), frames of raw blocks for data that would not shrink
// (archives, media, model files). Skipping the match finder for such data
// is most of what makes a snapshot fast.
type snapshotZstdWriter struct {
	w       io.Writer
	enc     *zstd.Encoder
	encOpen bool   // enc has written part of a frame since its last Close
	raw     bool   // writes go to a raw frame
	pending []byte // last raw block, held back to mark it Last_Block
	err     error
}

func newSnapshotZstdWriter(w io.Writer) (*snapshotZstdWriter, error) {
	enc, err := zstd.NewWriter(w,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		return nil, err
	}
	return &snapshotZstdWriter{w: w, enc: enc, pending: make([]byte, 0, snapshotRawBlockSize)}, nil
}

// Write compresses p, or stores it raw in raw mode.
func (z *snapshotZstdWriter) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if !z.raw {
		z.encOpen = true
		n, err := z.enc.Write(p)
		z.err = err
		return n, err
	}
	written := 0
	for len(p) > 0 {
		if len(z.pending) == snapshotRawBlockSize {
			if z.err = z.writeRawBlock(false); z.err != nil {
				return written, z.err
			}
		}
		k := min(len(p), snapshotRawBlockSize-len(z.pending))
		z.pending = append(z.pending, p[:k]...)
		p = p[k:]
		written += k
	}
	return written, nil
}

// SetRaw switches between compressed and raw frames, ending the current
// frame.
func (z *snapshotZstdWriter) SetRaw(raw bool) error {
	if z.err != nil || raw == z.raw {
		return z.err
	}
	if raw {
		if z.encOpen {
			if z.err = z.enc.Close(); z.err != nil {
				return z.err
			}
			z.enc.Reset(z.w)
			z.encOpen = false
		}
		if _, z.err = io.WriteString(z.w, snapshotRawFrameHeader); z.err != nil {
			return z.err
		}
	} else if z.err = z.writeRawBlock(true); z.err != nil {
		return z.err
	}
	z.raw = raw
	return nil
}

// writeRawBlock emits the pending bytes as one raw block (RFC 8878
// §3.1.1.2: a 3-byte little-endian header of Last_Block, Block_Type 0 and
// Block_Size, then the bytes).
func (z *snapshotZstdWriter) writeRawBlock(last bool) error {
	header := uint32(len(z.pending)) << 3
	if last {
		header |= 1
	}
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], header)
	if _, err := z.w.Write(h[:3]); err != nil {
		return err
	}
	if _, err := z.w.Write(z.pending); err != nil {
		return err
	}
	z.pending = z.pending[:0]
	return nil
}

// Close ends the last frame.
func (z *snapshotZstdWriter) Close() error {
	if err := z.SetRaw(false); err != nil {
		return err
	}
	return z.enc.Close()
}

// snapshotRawMinSize is the smallest file probed for compressibility.
const snapshotRawMinSize = 256 << 10

// snapshotProbeSize is how much of a file the probe compresses (64 KiB).
const snapshotProbeSize = 64 << 10

// snapshotProbe guesses whether file data would shrink by compressing a
// sample of it.
type snapshotProbe struct {
	enc    *zstd.Encoder
	sample []byte
	out    []byte
}

// incompressible reports whether the first 64 KiB of r shrink by less
// than 1/32 at the fastest level.
func (p *snapshotProbe) incompressible(r io.ReaderAt) bool {
	if p.enc == nil {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return false
		}
		p.enc, p.sample = enc, make([]byte, snapshotProbeSize)
	}
	n, _ := r.ReadAt(p.sample, 0)
	if n < snapshotProbeSize {
		return false
	}
	p.out = p.enc.EncodeAll(p.sample, p.out[:0])
	return len(p.out) >= n-n/32
}
