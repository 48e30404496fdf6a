package snapshot

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSparseWriterKeepsContent writes files made of data and zero blocks,
// misaligned runs and a zero tail, split into random chunks, and checks
// the file reads back byte for byte at its full size.
func TestSparseWriterKeepsContent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	dir := t.TempDir()
	for i := range 40 {
		var want []byte
		for range 1 + rng.IntN(12) {
			n := rng.IntN(3 * holeBlock)
			if rng.IntN(2) == 0 {
				want = append(want, make([]byte, n)...)
				continue
			}
			for range n {
				want = append(want, byte(1+rng.IntN(255)))
			}
		}
		path := filepath.Join(dir, "f")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := &sparseWriter{f: f}
		for p := want; len(p) > 0; {
			n := min(len(p), 1+rng.IntN(2*holeBlock))
			if _, err := w.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: read back %d bytes, want %d (content differs)", i, len(got), len(want))
		}
	}
}

// TestRestoreKeepsHoles: a file that was sparse in the box (256 MiB, a few
// bytes of data) is restored with holes, not as 256 MiB of zeros; a
// restore of it into a layer as small as the box's data failed with "no
// space left on device", and the fallback then removed the box's files.
func TestRestoreKeepsHoles(t *testing.T) {
	dir := t.TempDir()
	upper := filepath.Join(dir, "upper")
	if err := os.MkdirAll(upper, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(upper, "sparse")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("middle"), 128<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var archive bytes.Buffer
	if err := Archive(upper, &archive); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "restored")
	if err := Restore(bytes.NewReader(archive.Bytes()), target); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(target, "sparse")
	var st unix.Stat_t
	if err := unix.Stat(restored, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 256<<20 {
		t.Fatalf("restored size %d, want %d", st.Size, 256<<20)
	}
	if allocated := st.Blocks * 512; allocated > 1<<20 {
		t.Errorf("the restored file allocates %d bytes for 6 bytes of data (holes written as zeros)", allocated)
	}
	r, err := os.Open(restored)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make([]byte, 6)
	if _, err := r.ReadAt(got, 128<<20); err != nil || string(got) != "middle" {
		t.Errorf("data in the middle = %q, %v", got, err)
	}
}

// TestHoleReaderReadsWhatAReadDoes: files with holes at the start, middle
// and end, and data at odd offsets, read through holeReader (which skips
// the holes with SEEK_DATA/SEEK_HOLE) give the bytes a plain read gives.
func TestHoleReaderReadsWhatAReadDoes(t *testing.T) {
	dir := t.TempDir()
	for i, layout := range [][]struct{ off, n int64 }{
		{{off: 5 << 20, n: 100}},                         // hole, data, hole to the end
		{{off: 0, n: 4096}, {off: 3 << 20, n: 70000}},    // data first
		{{off: 1 << 20, n: 1}, {off: 9<<20 - 10, n: 10}}, // data at the very end
		{{off: 123, n: 8 << 20}},                         // mostly data
	} {
		path := filepath.Join(dir, "f")
		os.Remove(path)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(9 << 20); err != nil {
			t.Fatal(err)
		}
		for j, d := range layout {
			buf := bytes.Repeat([]byte{byte('a' + j)}, int(d.n))
			if _, err := f.WriteAt(buf, d.off); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := io.CopyBuffer(&got, &holeReader{f: f, size: int64(len(want))}, make([]byte, 100000)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("layout %d: holeReader gave %d bytes differing from the file's %d", i, got.Len(), len(want))
		}
	}
}
