package box

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box/initproc"
)

// A fork (restore into a new box) killed midway leaves a box that says it
// is incomplete: ListBoxes reports the snapshot whose restore was cut
// short, a start is refused naming `hermes box rm`, and rm removes it. (It
// used to look like a whole, stopped box that started without the
// snapshot's files.)
func TestKilledForkLeavesIncompleteBox(t *testing.T) {
	m := persistentTestManager(t, nil)
	home := m.opts.Home
	cmd := exec.Command(os.Args[0], layerHolderArg, home, "forked", "new", "snap-1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("fork holder did not get ready: %q %v", line, err)
	}
	boxes, err := ListBoxes(home)
	must(t, err)
	if len(boxes) != 1 || boxes[0].RestoreOf != "snap-1" || !boxes[0].InUse {
		t.Fatalf("a running fork lists as %+v, want restoring snap-1 and in use", boxes)
	}
	cmd.Process.Kill()
	cmd.Wait()
	image := filepath.Join(m.StateDir("forked"), "disk.img")
	awaitNoLoop(image, 10*time.Second)

	boxes, err = ListBoxes(home)
	must(t, err)
	if len(boxes) != 1 || boxes[0].RestoreOf != "snap-1" || boxes[0].InUse {
		t.Fatalf("a killed fork lists as %+v, want an incomplete restore of snap-1", boxes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := m.Open(ctx, "forked")
	if err == nil {
		env.Close()
		t.Fatal("a box whose fork was killed started as if whole")
	}
	var inc *IncompleteRestoreError
	if !errors.As(err, &inc) || !strings.Contains(err.Error(), "hermes box rm forked") || !strings.Contains(err.Error(), "snap-1") {
		t.Fatalf("start of an incomplete box: %v; want it refused naming snap-1 and `hermes box rm forked`", err)
	}
	must(t, m.Remove("forked"))
	if boxes, _ := ListBoxes(home); len(boxes) != 0 {
		t.Fatalf("boxes after rm: %+v", boxes)
	}
}

// A restore into a new box that fails removes the box it made: nothing is
// listed and no state dir or image stays (a refused restore used to leave
// the new box, its disk image allocated).
func TestFailedNewRestoreRemovesBox(t *testing.T) {
	m := persistentTestManager(t, nil)
	err := m.WithNewUpper("newt", "snap-1", func(upper string) error {
		must(t, os.WriteFile(filepath.Join(upper, "part"), []byte("x"), 0o644))
		return errors.New("no room")
	})
	if err == nil || !strings.Contains(err.Error(), "no room") {
		t.Fatalf("WithNewUpper: %v, want fn's error", err)
	}
	if _, serr := os.Stat(m.StateDir("newt")); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("the failed restore's box is left: %v", serr)
	}
	// A completed one is whole; a second into the same task is refused.
	must(t, m.WithNewUpper("newt", "snap-1", func(upper string) error {
		return os.WriteFile(filepath.Join(upper, "whole"), []byte("x"), 0o644)
	}))
	if boxes, _ := ListBoxes(m.opts.Home); len(boxes) != 1 || boxes[0].RestoreOf != "" {
		t.Fatalf("a completed restore lists as %+v", boxes)
	}
	if err := m.WithNewUpper("newt", "snap-1", func(string) error { return nil }); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a new restore into an existing box: %v, want fs.ErrExist", err)
	}
	must(t, m.WithUpper("newt", false, func(upper string) error {
		_, err := os.Stat(filepath.Join(upper, "whole"))
		return err
	}))
}

// A box start removes what a killed restore left beside the layer's
// upper dir (upper.restore-*), which takes the box's disk space.
func TestBoxStartRemovesStaleRestore(t *testing.T) {
	m := persistentTestManager(t, nil)
	image := layerTestImage(t, m, "stale")
	must(t, m.WithUpper("stale", false, func(upper string) error {
		d := upper + ".restore-abc123"
		must(t, os.MkdirAll(filepath.Join(d, "x"), 0o755))
		return os.WriteFile(filepath.Join(d, "x", "big"), make([]byte, 1<<20), 0o644)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := m.Open(ctx, "stale")
	must(t, err)
	must(t, env.Close())
	awaitNoLoop(image, 10*time.Second)
	lm, err := mountLayerDetached(image)
	must(t, err)
	defer lm.Close()
	if _, err := os.Stat(filepath.Join(initproc.FDPath(lm.fd), "upper.restore-abc123")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a killed restore's leftover survived the box start: %v", err)
	}
}
