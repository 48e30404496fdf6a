package box

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCopySparseKeepsDataAndHoles(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	f.Truncate(size)
	f.WriteAt(bytes.Repeat([]byte("a"), 8192), 0)
	f.WriteAt(bytes.Repeat([]byte("z"), 4096), 40<<20)
	f.Close()
	dst := filepath.Join(dir, "dst")
	if err := copySparse(src, dst); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(src)
	b, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("copy differs from the source (err %v)", err)
	}
	var st unix.Stat_t
	unix.Stat(dst, &st)
	if st.Blocks*512 > 4<<20 {
		t.Fatalf("the copy of a 64 MiB file with 12 KiB of data uses %d bytes: holes were filled", st.Blocks*512)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestDiskImagesComeFromOneTemplate(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 is not installed (apt-get install e2fsprogs)")
	}
	home := t.TempDir()
	m := &Manager{opts: Options{Home: home}}
	a, b := filepath.Join(home, "a.img"), filepath.Join(home, "b.img")
	if err := m.ensureDiskImage(a, 256); err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join(home, "boxes", diskTemplateDir, "ext4-256m-v2.img")
	before, err := os.Stat(tmpl)
	if err != nil {
		t.Fatalf("no template after the first image: %v", err)
	}
	if err := m.ensureDiskImage(b, 256); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(tmpl)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("the template was made again for the second image")
	}
	for _, img := range []string{a, b} {
		fi, err := os.Stat(img)
		if err != nil || fi.Size() != 256<<20 {
			t.Fatalf("%s: %v size %d", img, err, fi.Size())
		}
		if out, err := exec.Command("e2fsck", "-n", "-f", img).CombinedOutput(); err != nil {
			t.Fatalf("%s is not a clean ext4 file system: %v %s", img, err, out)
		}
	}
	// A new box copies (and the loop attach writes back) the image's data:
	// for the default 50 GiB layer that is a few hundred KB, not the 4.7 MB
	// that reserved GDT blocks (resize_inode) used to take.
	big := filepath.Join(home, "big.img")
	if err := m.ensureDiskImage(big, 51200); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(big, &st); err != nil || st.Blocks*512 > 1<<20 {
		t.Fatalf("a fresh 50 GiB layer image holds %d KiB of data (err %v), want < 1024", st.Blocks/2, err)
	}
	// an existing image is kept as it is
	os.WriteFile(b, []byte("box data"), 0o600)
	if err := m.ensureDiskImage(b, 256); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(b); string(data) != "box data" {
		t.Fatal("ensureDiskImage replaced an existing image")
	}
}

// BenchmarkDiskImage compares making a new persistent layer image of the
// default 50 GiB with mkfs.ext4 (what every new box did before) with
// copying the template (what it does now).
func BenchmarkDiskImage(b *testing.B) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		b.Skip("mkfs.ext4 is not installed (apt-get install e2fsprogs)")
	}
	const sizeMiB = 51200
	dir := b.TempDir()
	b.Run("mkfs", func(b *testing.B) {
		for b.Loop() {
			p := filepath.Join(dir, "mkfs.img")
			if err := makeExt4Image(p, sizeMiB); err != nil {
				b.Fatal(err)
			}
			os.Remove(p)
		}
	})
	b.Run("template-copy", func(b *testing.B) {
		m := &Manager{opts: Options{Home: dir}}
		if _, err := m.diskTemplate(sizeMiB); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			p := filepath.Join(dir, "copy.img")
			if err := m.ensureDiskImage(p, sizeMiB); err != nil {
				b.Fatal(err)
			}
			os.Remove(p)
		}
	})
}
