package box

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box/snapshot"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/initproc"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// layerHolderArg makes the test binary a process that mounts a box's
// layer (WithUpper) and, inside, either blocks ("hold") or restores a
// snapshot into it over and over ("restore ID"), for its parent to kill.
const layerHolderArg = "__hermes_test_layer_holder"

// layerHolderMain is the re-executed test binary: args are HOME TASK MODE
// [SNAPSHOT]. It prints "ready" once the layer is mounted.
func layerHolderMain(args []string) int {
	home, task, mode := args[0], args[1], args[2]
	tr := true
	term := testTerminal(home)
	term.ContainerPersistent = &tr
	m, err := NewManager(Options{Terminal: term, Home: home, CgroupRoot: testCgroupRoot()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	withUpper := func(fn func(string) error) error { return m.WithUpper(task, false, fn) }
	if mode == "new" { // a fork into a new box, killed midway
		withUpper = func(fn func(string) error) error { return m.WithNewUpper(task, args[3], fn) }
	}
	err = withUpper(func(upper string) error {
		if err := os.WriteFile(filepath.Join(upper, "holder"), make([]byte, 1<<20), 0o644); err != nil {
			return err
		}
		fmt.Println("ready")
		store := snapshot.NewStore(home)
		for {
			switch mode {
			case "restore":
				if _, err := store.ReplaceUpper(args[3], upper); err != nil {
					return err
				}
			default:
				time.Sleep(time.Hour)
			}
		}
	})
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// layerTestImage makes the persistent layer of task under m with a few
// hundred files in it, and returns the image's path.
func layerTestImage(t *testing.T, m *Manager, task string) string {
	t.Helper()
	err := m.WithUpper(task, true, func(upper string) error {
		for i := range 300 {
			d := filepath.Join(upper, "data", fmt.Sprint(i%10))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprint(i)), make([]byte, 4096+i), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(m.StateDir(task), "disk.img")
}

// layerLeftovers reports what of image is still attached or mounted in
// this mount namespace: its loop devices and the mount points under dir.
func layerLeftovers(image, dir string) []string {
	out := loopDevicesFor(image)
	info, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && strings.HasPrefix(unescapeMountinfo(f[4]), dir) {
			out = append(out, unescapeMountinfo(f[4]))
		}
	}
	return out
}

// checkExt4 runs e2fsck -fn on image when e2fsck is installed.
func checkExt4(t *testing.T, image string) {
	t.Helper()
	fsck, err := exec.LookPath("e2fsck")
	if err != nil {
		return
	}
	if out, err := exec.Command(fsck, "-fn", image).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn %s: %v\n%s", image, err, out)
	}
}

// A snapshot or restore killed with SIGKILL while it has the layer
// mounted leaves nothing mounted on the host and no loop device on the
// image (it used to leave the ext4 layer mounted at boxes/TASK/layer,
// which the next box start mounted a second time through another loop
// device, corrupting it).
func TestLayerMountEndsWithKilledProcess(t *testing.T) {
	m := persistentTestManager(t, nil)
	home := m.opts.Home
	image := layerTestImage(t, m, "held")
	var snapID string
	err := m.WithUpper("held", false, func(upper string) error {
		man, err := snapshot.NewStore(home).Create("held", upper, snapshot.Origin{})
		snapID = man.ID
		return err
	})
	must(t, err)
	for i, mode := range []string{"hold", "restore", "restore", "restore"} {
		t.Run(fmt.Sprint(mode, i), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], layerHolderArg, home, "held", mode, snapID)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "ready\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("layer holder did not get ready: %q %v", line, err)
			}
			if mode == "restore" { // somewhere in the middle of a restore
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			left := layerLeftovers(image, filepath.Join(home, "boxes"))
			for deadline := waitfor.Deadline(t); len(left) > 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				left = layerLeftovers(image, filepath.Join(home, "boxes"))
			}
			if len(left) > 0 {
				t.Fatalf("a killed snapshot/restore left its layer attached or mounted: %q", left)
			}
			checkExt4(t, image)
		})
	}
	// The layer is whole and usable again.
	err = m.WithUpper("held", false, func(upper string) error {
		_, err := os.Stat(filepath.Join(upper, "data", "7", "107"))
		return err
	})
	must(t, err)
}

// leakLayerMount mounts image on the host as an older hermes's killed
// snapshot left it: a loop device mounted at a directory, for the test's
// duration.
func leakLayerMount(t *testing.T, image string) (dev, mountPoint string) {
	t.Helper()
	dev, lf, err := initproc.AttachLoop(image)
	must(t, err)
	defer lf.Close()
	mountPoint = t.TempDir()
	must(t, unix.Mount(dev, mountPoint, "ext4", unix.MS_NOATIME, ""))
	t.Cleanup(func() {
		unix.Unmount(mountPoint, 0)
		waitLoopReleased(image, 5*time.Second)
	})
	return dev, mountPoint
}

// A layer image that is mounted elsewhere is never mounted a second time:
// snapshot/restore (WithUpper) and the box start refuse, naming the
// image, the device and the fix.
func TestLayerMountedElsewhereIsRefused(t *testing.T) {
	m := persistentTestManager(t, nil)
	image := layerTestImage(t, m, "leaked")
	dev, mp := leakLayerMount(t, image)

	called := false
	err := m.WithUpper("leaked", false, func(string) error { called = true; return nil })
	var inUse *LayerInUseError
	if !errors.As(err, &inUse) || called {
		t.Fatalf("WithUpper on a mounted image: err %v, fn called %v; want a LayerInUseError", err, called)
	}
	if inUse.Image != image || inUse.Device != dev || !slices.Contains(inUse.Mounts, mp) {
		t.Fatalf("error names %q %q %q, want %s %s %s", inUse.Image, inUse.Device, inUse.Mounts, image, dev, mp)
	}
	for _, want := range []string{image, dev, "umount " + mp, "e2fsck"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %q", err, want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := m.Open(ctx, "leaked")
	if err == nil {
		env.Close()
		t.Fatal("a box started on a layer image mounted elsewhere")
	}
	if !errors.As(err, &inUse) {
		t.Fatalf("box start on a mounted image: %v; want a LayerInUseError", err)
	}
	if devs := loopDevicesFor(image); len(devs) != 1 {
		t.Fatalf("loop devices on the image after the refusals: %q, want only %s", devs, dev)
	}
}

// A layer held by a detached mount (as another process's snapshot holds
// it: in no mount namespace) is refused too, after the wait for a stopping
// box; once it is released the layer mounts again, and the file system is
// clean.
func TestLayerHeldInAnotherNamespaceIsRefused(t *testing.T) {
	m := persistentTestManager(t, nil)
	image := layerTestImage(t, m, "held")
	lm, err := mountLayerDetached(image)
	must(t, err)
	defer lm.Close()
	var inUse *LayerInUseError
	err = awaitImageFree(image, 100*time.Millisecond)
	if !errors.As(err, &inUse) || len(inUse.Mounts) != 0 {
		t.Fatalf("image held by a detached mount: %v; want a LayerInUseError without host mounts", err)
	}
	if !strings.Contains(err.Error(), image) || !strings.Contains(err.Error(), "/proc/*/mountinfo") {
		t.Fatalf("error %q names neither the image nor how to find the holder", err)
	}
	lm.Close()
	waitLoopReleased(image, 5*time.Second)
	must(t, m.WithUpper("held", false, func(string) error { return nil }))
	checkExt4(t, image)
}

// A loop device left attached to the image but mounted nowhere (a stale
// leftover without autoclear) is detached, and the layer mounts.
func TestLayerStaleLoopIsDetached(t *testing.T) {
	m := persistentTestManager(t, nil)
	image := layerTestImage(t, m, "stale")
	dev, lf, err := initproc.AttachLoop(image)
	must(t, err)
	// Drop autoclear, as losetup without --autoclear leaves it.
	info, err := unix.IoctlLoopGetStatus64(int(lf.Fd()))
	must(t, err)
	info.Flags &^= unix.LO_FLAGS_AUTOCLEAR
	must(t, unix.IoctlLoopSetStatus64(int(lf.Fd()), info))
	lf.Close()
	t.Cleanup(func() { detachIdleLoop(dev) })
	if devs := loopDevicesFor(image); !slices.Equal(devs, []string{dev}) {
		t.Fatalf("loop devices %q, want %s", devs, dev)
	}
	must(t, m.WithUpper("stale", false, func(string) error { return nil }))
	if devs := loopDevicesFor(image); len(devs) != 0 {
		t.Fatalf("loop devices left on the image: %q", devs)
	}
}

// A layer image mounted through another name of the same file (a hard
// link, a path through a bind mount of HERMES_HOME) is found by device
// and inode and refused like one mounted by its own path (the guard used
// to compare the loop device's backing path, and mounted it a second
// time).
func TestLayerMountedThroughOtherNameIsRefused(t *testing.T) {
	m := persistentTestManager(t, nil)
	home := m.opts.Home
	image := layerTestImage(t, m, "alias")
	for _, how := range []string{"hardlink", "bind"} {
		t.Run(how, func(t *testing.T) {
			var alias string
			switch how {
			case "hardlink":
				alias = filepath.Join(home, "alias.img")
				must(t, os.Link(image, alias))
				t.Cleanup(func() { os.Remove(alias) })
			case "bind":
				bind := t.TempDir()
				must(t, unix.Mount(home, bind, "", unix.MS_BIND, ""))
				alias = filepath.Join(bind, strings.TrimPrefix(image, home))
				t.Cleanup(func() { unix.Unmount(bind, unix.MNT_DETACH) })
			}
			dev, mp := leakLayerMount(t, alias)
			err := m.WithUpper("alias", false, func(string) error { return nil })
			var inUse *LayerInUseError
			if !errors.As(err, &inUse) {
				t.Fatalf("WithUpper on an image mounted through %s: %v; want a LayerInUseError", alias, err)
			}
			if inUse.Device != dev || !slices.Contains(inUse.Mounts, mp) {
				t.Fatalf("error names %q %q, want %s %s", inUse.Device, inUse.Mounts, dev, mp)
			}
			if devs := loopDevicesFor(image); !slices.Equal(devs, []string{dev}) {
				t.Fatalf("loop devices on the image: %q, want only %s", devs, dev)
			}
		})
	}
	checkExt4(t, image)
}
