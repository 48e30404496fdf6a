package box

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func BenchmarkScratch(b *testing.B) {
	dir := b.TempDir()
	upper := filepath.Join(dir, "upper")
	snapBenchUpper(b, upper)
	out := filepath.Join(dir, "o")
	run := func(name string, mk func(w io.Writer) (io.WriteCloser, error), toFile bool) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var w io.Writer = io.Discard
				var f *os.File
				if toFile {
					f, _ = os.Create(out)
					w = f
				}
				zw, err := mk(w)
				if err != nil {
					b.Fatal(err)
				}
				a := newSnapshotArchiver(zw, true)
				if err := a.addTree(upper); err != nil {
					b.Fatal(err)
				}
				a.tw.Close()
				zw.Close()
				if f != nil {
					f.Close()
				}
			}
		})
	}
	nop := func(w io.Writer) (io.WriteCloser, error) { return nopWC{w}, nil }
	fast := func(opts ...zstd.EOption) func(w io.Writer) (io.WriteCloser, error) {
		return func(w io.Writer) (io.WriteCloser, error) {
			return zstd.NewWriter(w, append([]zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest)}, opts...)...)
		}
	}
	i := 0
	runNew := func(name string, mk func(w io.Writer) (io.WriteCloser, error)) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				i++
				f, _ := os.Create(out + string(rune('a'+i%20)))
				zw, _ := mk(f)
				a := newSnapshotArchiver(zw, true)
				if err := a.addTree(upper); err != nil {
					b.Fatal(err)
				}
				a.tw.Close()
				zw.Close()
				f.Close()
				b.StopTimer()
				os.Remove(f.Name())
				b.StartTimer()
			}
		})
	}
	runNew("tar-newfile", nop)
	runNew("zstd-c2-newfile", fast(zstd.WithEncoderConcurrency(2)))
	runNew("zstd-c2-noent-newfile", fast(zstd.WithEncoderConcurrency(2), zstd.WithNoEntropyCompression(true)))
	run("zstd-c2-noent-discard", fast(zstd.WithEncoderConcurrency(2), zstd.WithNoEntropyCompression(true)), false)
	// return
	run("tar-discard", nop, false)
	run("tar-file", nop, true)
	run("zstd-c2-discard", fast(zstd.WithEncoderConcurrency(2)), false)
	run("zstd-c2-file", fast(zstd.WithEncoderConcurrency(2)), true)
	run("zstd-blocks-discard", fast(zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithConcurrentBlocks(true)), false)
	run("zstd-blocks-w1m-discard", fast(zstd.WithEncoderConcurrency(2), zstd.WithConcurrentBlocks(true), zstd.WithWindowSize(1<<20)), false)
	run("zstd-blocks-w1m-file", fast(zstd.WithEncoderConcurrency(2), zstd.WithConcurrentBlocks(true), zstd.WithWindowSize(1<<20)), true)
}

type nopWC struct{ io.Writer }

func (nopWC) Close() error { return nil }
