package snapshot

import (
	"bytes"
	crand "crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// failingWriter accepts limit bytes, then fails.
type failingWriter struct{ limit int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.limit {
		n := w.limit
		w.limit = 0
		return n, errors.New("disk full")
	}
	w.limit -= len(p)
	return len(p), nil
}

// TestSnapshotChunkedFramesMatchReferenceTools snapshots files that cross
// every boundary of the parallel writer (compressed chunks, raw blocks,
// raw frames, a switch between both inside one chunk) and checks that the
// reference zstd and GNU tar extract exactly the same tree as Restore.
func TestSnapshotChunkedFramesMatchReferenceTools(t *testing.T) {
	dir := t.TempDir()
	upper := filepath.Join(dir, "upper")
	random := func(n int) string {
		b := make([]byte, n)
		_, err := crand.Read(b)
		snapMust(t, err)
		return string(b)
	}
	snapWrite(t, filepath.Join(upper, "a-big.go"), strings.Repeat("func main() { println(\"hello\") }\n", 100_000), 0o644) // 3.4 MB: 7 chunks
	snapWrite(t, filepath.Join(upper, "b-chunk.bin"), random(chunkSize), 0o644)                                            // exactly one chunk of raw data
	snapWrite(t, filepath.Join(upper, "c-odd.bin"), random(5*rawBlockSize+777), 0o600)                                     // partial last raw block
	snapWrite(t, filepath.Join(upper, "d-small.txt"), "between raw files\n", 0o644)
	snapWrite(t, filepath.Join(upper, "e-block.bin"), random(2*chunkSize+rawBlockSize), 0o644) // three raw frames
	snapWrite(t, filepath.Join(upper, "f/last.txt"), strings.Repeat("tail ", 1000), 0o644)

	var archive bytes.Buffer
	snapMust(t, Archive(upper, &archive))
	restored := filepath.Join(dir, "restored")
	snapMust(t, Restore(bytes.NewReader(archive.Bytes()), restored))
	snapDiff(t, "Restore tree", snapDescribe(t, upper), snapDescribe(t, restored))

	if _, err := exec.LookPath("zstd"); err != nil {
		t.Skip("zstd CLI not installed (apt-get install zstd); skipping the reference-decoder check")
	}
	archivePath := filepath.Join(dir, "snap.tar.zst")
	snapMust(t, os.WriteFile(archivePath, archive.Bytes(), 0o600))
	extracted := filepath.Join(dir, "extracted")
	snapMust(t, os.Mkdir(extracted, 0o755))
	out, err := exec.Command("sh", "-c", "zstd -qdc "+archivePath+" | tar -xpf - -C "+extracted).CombinedOutput()
	if err != nil {
		t.Fatalf("zstd -dc | tar -x: %v\n%s", err, out)
	}
	snapDiff(t, "zstd | tar tree", snapDescribe(t, upper), snapDescribe(t, extracted))
}

// TestSnapshotUpperReportsWriteErrors checks that a failing destination
// (a full disk) fails the snapshot instead of leaving a short archive
// reported as complete, whichever frame the failure hits.
func TestSnapshotUpperReportsWriteErrors(t *testing.T) {
	upper := filepath.Join(t.TempDir(), "upper")
	for i := range 8 {
		b := make([]byte, 300_000)
		_, err := crand.Read(b)
		snapMust(t, err)
		snapWrite(t, filepath.Join(upper, "f"+string(rune('a'+i))), strings.Repeat("some text ", 30_000)+string(b), 0o644)
	}
	var full bytes.Buffer
	snapMust(t, Archive(upper, &full))
	for _, limit := range []int{0, 100, full.Len() / 2, full.Len() - 1} {
		if err := Archive(upper, &failingWriter{limit: limit}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("writer failing after %d bytes: err = %v, want the write error", limit, err)
		}
	}
}
