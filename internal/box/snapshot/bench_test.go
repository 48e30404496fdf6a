package snapshot

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// snapBenchUpper builds a ~50 MB upper layer shaped like a task's
// changes: 2000 small source-like files (4–12 KiB, compressible) in 40
// dirs, 20 build outputs of 512 KiB (semi-compressible) and two 12 MiB
// incompressible blobs (archives, model files), plus symlinks.
func snapBenchUpper(b *testing.B, dir string) int64 {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var total int64
	write := func(path string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		total += int64(len(data))
	}
	words := strings.Fields("func return if err != nil package import type struct string int for range go defer")
	for i := range 2000 {
		var sb strings.Builder
		size := 4096 + rng.IntN(8192)
		for sb.Len() < size {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(" \n\t"[rng.IntN(3)])
		}
		write(filepath.Join(dir, "src", fmt.Sprintf("pkg%02d", i%40), fmt.Sprintf("file%04d.go", i)), []byte(sb.String()))
	}
	for i := range 20 {
		data := make([]byte, 512<<10)
		for j := range data {
			data[j] = byte(rng.IntN(16))
		}
		write(filepath.Join(dir, "build", fmt.Sprintf("obj%02d.o", i)), data)
	}
	for i := range 2 {
		data := make([]byte, 12<<20)
		for j := 0; j < len(data); j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				data[j+k] = byte(v >> (8 * k))
			}
		}
		write(filepath.Join(dir, "blobs", fmt.Sprintf("blob%d.bin", i)), data)
	}
	for i := range 40 {
		if err := os.Symlink(fmt.Sprintf("../src/pkg%02d", i), filepath.Join(dir, "build", fmt.Sprintf("link%02d", i))); err != nil {
			b.Fatal(err)
		}
	}
	return total
}

// BenchmarkSnapshot50MB measures Archive of a ~50 MB upper into a
// file (page cache, no fsync). Target (issue 3): ≤ 150 ms.
func BenchmarkSnapshot50MB(b *testing.B) {
	dir := b.TempDir()
	upper := filepath.Join(dir, "upper")
	total := snapBenchUpper(b, upper)
	out := filepath.Join(dir, "snap.tar.zst")
	b.SetBytes(total)
	cpu := snapCPUTime()
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		if err := Archive(upper, f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64((snapCPUTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	if fi, err := os.Stat(out); err == nil {
		b.ReportMetric(float64(fi.Size())/float64(total), "ratio")
	}
}

// BenchmarkRestore50MB measures Restore of the same upper from an
// in-memory archive into a fresh directory: "tmpdir" under $TMPDIR (ext4
// without a journal on the project machine), "layer-ext4" on a journaled
// ext4 image mounted through a loop device, as a persistent box's layer
// is (root only).
//
// The restored trees are removed only after the loop: ext4 without a
// journal skips inodes freed in the last ~30 s when it allocates one,
// reading each of them, so removing the previous iteration's 2,100 inodes
// just before the next one made every create scan them and the benchmark
// measured its own clean-up (2–5× the system time). The layer's journaled
// image does not do that check.
func BenchmarkRestore50MB(b *testing.B) {
	dir := b.TempDir()
	upper := filepath.Join(dir, "upper")
	total := snapBenchUpper(b, upper)
	var archive bytes.Buffer
	if err := Archive(upper, &archive); err != nil {
		b.Fatal(err)
	}
	b.Run("tmpdir", func(b *testing.B) {
		snapBenchRestore(b, archive.Bytes(), total, b.TempDir())
	})
	b.Run("layer-ext4", func(b *testing.B) {
		snapBenchRestore(b, archive.Bytes(), total, snapBenchLayer(b))
	})
	// The whole of a restore over a box's layer as ReplaceUpper does it:
	// extraction into a sibling dir, one syncfs, the exchange.
	b.Run("layer-ext4-synced", func(b *testing.B) {
		snapBenchReplace(b, archive.Bytes(), total, snapBenchLayer(b))
	})
	// The same through a detached mount's /proc/self/fd/N path, as hermes
	// box restore reaches the layer (box.Manager.WithUpper).
	b.Run("layer-ext4-detached-synced", func(b *testing.B) {
		snapBenchReplace(b, archive.Bytes(), total, snapBenchDetached(b, snapBenchLayer(b)))
	})
}

// snapBenchReplace runs replaceUpper with Restore of archive into new
// directories of dir b.N times and reports the CPU time per restore.
func snapBenchReplace(b *testing.B, archive []byte, total int64, dir string) {
	b.SetBytes(total)
	i := 0
	var cpu time.Duration
	for b.Loop() {
		target := filepath.Join(dir, fmt.Sprintf("restore%d", i), "upper")
		i++
		start := snapCPUTime()
		err := replaceUpper(target, func(tmp string) error { return Restore(bytes.NewReader(archive), tmp) },
			func() (treeSize, error) { return archiveSize(bytes.NewReader(archive)) }, 0)
		if err != nil {
			b.Fatal(err)
		}
		cpu += snapCPUTime() - start
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// snapBenchDetached returns a path to a detached copy of the mount at mnt
// (open_tree(2) OPEN_TREE_CLONE): /proc/self/fd/N, attached to no mount
// namespace. The copy goes before mnt is unmounted.
func snapBenchDetached(b *testing.B, mnt string) string {
	b.Helper()
	fd, err := unix.OpenTree(unix.AT_FDCWD, mnt, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		b.Skipf("open_tree %s: %v", mnt, err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	return "/proc/self/fd/" + strconv.Itoa(fd)
}

// snapBenchRestore restores archive into new directories of dir b.N times
// and reports the CPU time per restore.
func snapBenchRestore(b *testing.B, archive []byte, total int64, dir string) {
	b.SetBytes(total)
	i := 0
	var cpu time.Duration
	for b.Loop() {
		target := filepath.Join(dir, fmt.Sprintf("restore%d", i))
		i++
		start := snapCPUTime()
		if err := Restore(bytes.NewReader(archive), target); err != nil {
			b.Fatal(err)
		}
		cpu += snapCPUTime() - start
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// snapBenchLayer mounts a fresh 4 GiB ext4 image made like a persistent
// box's layer (box's makeExt4Image: no reserved blocks, no resize inode,
// lazy init) on a loop device and returns the mount point; it is
// unmounted at the end of b. Skips unless root.
func snapBenchLayer(b *testing.B) string {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("mounting an ext4 image needs root")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		b.Skip("mkfs.ext4 is not installed (apt-get install e2fsprogs)")
	}
	dir := b.TempDir()
	image, mnt := filepath.Join(dir, "layer.img"), filepath.Join(dir, "mnt")
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(image, 4<<30); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^resize_inode",
		"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", image).CombinedOutput(); err != nil {
		b.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "loop,noatime", image, mnt).CombinedOutput(); err != nil {
		b.Skipf("mount -o loop: %v %s", err, out)
	}
	b.Cleanup(func() {
		if out, err := exec.Command("umount", "-d", mnt).CombinedOutput(); err != nil {
			b.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	return mnt
}

// snapCPUTime returns the user+system CPU time of this process so far;
// on a shared machine cpu-ms/op shows the work independent of contention.
func snapCPUTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
