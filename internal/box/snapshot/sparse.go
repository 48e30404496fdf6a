package snapshot

import (
	"bytes"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// holeBlock is the unit of hole detection: a run of zero bytes that fills
// whole 4 KiB blocks of the file (by file offset) is skipped, so the file
// system allocates nothing for it, as `cp --sparse=always` does.
const holeBlock = 4096

// zeroBlock is compared against to find zero blocks (bytes.Equal is
// vectorised).
var zeroBlock [holeBlock]byte

// fileTarget is where a sparseWriter writes: an *os.File, or a
// blockCounter that only adds up what would be allocated.
type fileTarget interface {
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
}

// sparseWriter writes a regular file from offset 0, leaving zero blocks as
// holes. A file that was sparse in the box (a 1.5 GB `truncate -s` file
// holding a few bytes) is archived as zeros, which compress to nearly
// nothing; without this a restore would allocate every one of them, and a
// layer that held the file could not hold it restored. Writes may come in
// chunks of any size: an incomplete last block waits in pend for the next.
type sparseWriter struct {
	f fileTarget
	// off is where pend starts: everything before it is written or left
	// as a hole; it is always a multiple of holeBlock.
	off   int64
	pend  [holeBlock]byte
	npend int
	// holeAtEnd is set when the last block was skipped: finish sets the
	// size with ftruncate then.
	holeAtEnd bool
}

// Write writes p after what was written before, skipping zero blocks.
func (w *sparseWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.npend > 0 {
		k := copy(w.pend[w.npend:], p)
		w.npend += k
		p = p[k:]
		if w.npend < holeBlock {
			return n, nil
		}
		w.npend = 0
		if err := w.blocks(w.pend[:]); err != nil {
			return 0, err
		}
	}
	whole := len(p) - len(p)%holeBlock
	if err := w.blocks(p[:whole]); err != nil {
		return 0, err
	}
	w.npend = copy(w.pend[:], p[whole:])
	return n, nil
}

// blocks writes p, whole blocks at w.off, in one write per run of data
// blocks; runs of zero blocks are skipped.
func (w *sparseWriter) blocks(p []byte) error {
	for len(p) > 0 {
		data := 0
		for data < len(p) && !bytes.Equal(p[data:data+holeBlock], zeroBlock[:]) {
			data += holeBlock
		}
		if data > 0 {
			if _, err := w.f.WriteAt(p[:data], w.off); err != nil {
				return err
			}
			w.off += int64(data)
			p = p[data:]
			w.holeAtEnd = false
			continue
		}
		hole := 0
		for hole < len(p) && bytes.Equal(p[hole:hole+holeBlock], zeroBlock[:]) {
			hole += holeBlock
		}
		w.off += int64(hole)
		p = p[hole:]
		w.holeAtEnd = true
	}
	return nil
}

// copyFrom copies r through buf-sized writes (so a whole archive entry is
// never held in memory).
func (w *sparseWriter) copyFrom(r io.Reader, buf []byte) error {
	_, err := io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, buf)
	return err
}

// finish writes the incomplete last block and gives the file its full
// size when it ends in a hole.
func (w *sparseWriter) finish() error {
	if w.npend > 0 {
		last := w.pend[:w.npend]
		if bytes.Equal(last, zeroBlock[:w.npend]) {
			w.off += int64(w.npend)
			w.holeAtEnd = true
		} else {
			if _, err := w.f.WriteAt(last, w.off); err != nil {
				return err
			}
			w.off += int64(w.npend)
			w.holeAtEnd = false
		}
		w.npend = 0
	}
	if w.holeAtEnd {
		return w.f.Truncate(w.off)
	}
	return nil
}

// holeReader reads a file from offset 0 to size like a plain read, but
// finds its holes with lseek(SEEK_DATA/SEEK_HOLE) and gives zeros for them
// without reading: a 5 GB sparse file with a few bytes of data took 21 s
// to snapshot, 15 of them the kernel zeroing pages for reads of holes.
type holeReader struct {
	f    *os.File
	pos  int64
	size int64
	// next is where the region that pos is in ends; data says whether it
	// is data (read) or a hole (zeros).
	next int64
	data bool
}

func (r *holeReader) Read(p []byte) (int, error) {
	if r.pos >= r.size {
		return 0, io.EOF
	}
	if r.pos >= r.next {
		if err := r.region(); err != nil {
			return 0, err
		}
	}
	n := int(min(int64(len(p)), r.next-r.pos))
	if !r.data {
		clear(p[:n])
		r.pos += int64(n)
		return n, nil
	}
	n, err := r.f.ReadAt(p[:n], r.pos)
	r.pos += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

// region finds the data or hole region starting at r.pos.
func (r *holeReader) region() error {
	fd := int(r.f.Fd())
	data, err := unix.Seek(fd, r.pos, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) { // no data after pos: a hole to the end
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Size < r.size {
			return io.ErrUnexpectedEOF // shrank: the caller says so
		}
		r.next, r.data = r.size, false
		return nil
	}
	if err != nil {
		return err
	}
	if data > r.pos {
		r.next, r.data = min(data, r.size), false
		return nil
	}
	hole, err := unix.Seek(fd, r.pos, unix.SEEK_HOLE)
	if err != nil {
		return err
	}
	r.next, r.data = min(hole, r.size), true
	return nil
}
