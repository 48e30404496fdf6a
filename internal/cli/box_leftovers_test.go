package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// A layer an older hermes left mounted on the host (its snapshot was
// killed) is reported by hermes box ls with advice that works: unmount it
// first (losetup -d alone does not detach a mounted device), and after
// that the box has nothing left to report.
func TestBoxLsAdvisesUnmountingALeakedLayer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting an ext4 image needs root")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 is not installed (apt-get install e2fsprogs)")
	}
	ta := newTestApp(t, nil, "", false)
	dir := filepath.Join(ta.home, "boxes", "leaked")
	layer, image := filepath.Join(dir, "layer"), filepath.Join(dir, "disk.img")
	if err := os.MkdirAll(layer, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", image).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", image, layer).CombinedOutput(); err != nil {
		t.Skipf("mount -o loop: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", layer).Run() })

	if code := ta.run("box", "ls"); code != 0 {
		t.Fatalf("box ls: %d %s", code, ta.stderr)
	}
	msg := ta.stderr.String()
	mountAdvice := strings.Index(msg, "`umount "+layer+"`")
	loopAdvice := strings.Index(msg, "loop device /dev/loop")
	if mountAdvice < 0 || loopAdvice < mountAdvice || !strings.Contains(msg, "`e2fsck -f "+image+"`") {
		t.Fatalf("box ls on a leaked layer mount: want the umount advice first, then the loop device's with e2fsck; got:\n%s", msg)
	}

	if out, err := exec.Command("umount", layer).CombinedOutput(); err != nil {
		t.Fatalf("the advised umount: %v %s", err, out)
	}
	for deadline := waitfor.Deadline(t); ; time.Sleep(10 * time.Millisecond) {
		ta.run("box", "ls")
		if ta.stderr.Len() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the advised umount, box ls still reports:\n%s", ta.stderr)
		}
	}
}
