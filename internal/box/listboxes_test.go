package box

import (
	"os"
	"path/filepath"
	"testing"
)

// ListBoxes (hermes box ls) must not create files in a box's state dir: a
// server removing that box at the same moment failed with "directory not
// empty" and left the box behind.
func TestListBoxesCreatesNoLockFile(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "boxes", "sbx-test")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	boxes, err := ListBoxes(home)
	if err != nil || len(boxes) != 1 || boxes[0].InUse {
		t.Fatalf("ListBoxes = %+v, %v", boxes, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("ListBoxes left %v in the box's state dir", entries)
	}
	lock, err := lockState(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if boxes, _ := ListBoxes(home); !boxes[0].InUse {
		t.Fatal("a locked box is not listed as in use")
	}
}
