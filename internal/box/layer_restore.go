package box

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// restoreMarker names the file in a new box's state dir that says a
// restore into it (hermes box fork, restore --task NEW) has not
// completed; it holds the snapshot id. WithNewUpper writes it before the
// layer is made and removes it once the restored tree is in place.
const restoreMarker = "restoring"

// IncompleteRestoreError is returned when a box is started whose restore
// from a snapshot was interrupted (its hermes killed): its layer lacks
// the snapshot's files, in part or whole.
type IncompleteRestoreError struct {
	Task     string
	Snapshot string
}

func (e *IncompleteRestoreError) Error() string {
	return fmt.Sprintf("box %s is incomplete (restore of %s interrupted): remove it with `hermes box rm %s` and restore or fork the snapshot again",
		QuoteName(e.Task), e.Snapshot, QuoteName(e.Task))
}

// restoringFrom returns the snapshot id of the interrupted (or running)
// restore into the box state dir dir, "" when there is none.
func restoringFrom(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, restoreMarker))
	if err != nil {
		return ""
	}
	if id := strings.TrimSpace(string(b)); id != "" {
		return id
	}
	return "?"
}

// checkRestoreComplete refuses to start the box in state dir dir while
// it carries a restore marker (the caller holds its state lock, so the
// restore that wrote it has ended without completing).
func checkRestoreComplete(dir string) error {
	if id := restoringFrom(dir); id != "" {
		return &IncompleteRestoreError{Task: filepath.Base(dir), Snapshot: id}
	}
	return nil
}

// WithNewUpper makes the new persistent box taskID and calls fn with its
// layer's upper directory (as WithUpper does), to restore snapshot into
// it. Until fn has returned without error the box is marked incomplete
// (restoreMarker): a box start refuses it and ListBoxes reports it, so a
// restore killed midway never leaves a box that looks whole. When fn
// fails the box is removed again, image and all. A box taskID that
// exists already is refused (fs.ErrExist).
func (m *Manager) WithNewUpper(taskID, snapshot string, fn func(upperDir string) error) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	dir := m.StateDir(taskID)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("box %s already exists: %w", QuoteName(taskID), fs.ErrExist)
		}
		return err
	}
	marker := filepath.Join(dir, restoreMarker)
	err := os.WriteFile(marker, []byte(snapshot+"\n"), 0o600)
	if err == nil {
		err = syncDirPath(dir)
	}
	if err == nil {
		err = m.WithUpper(taskID, true, fn)
	}
	if err != nil {
		if rerr := m.Remove(taskID); rerr != nil {
			return fmt.Errorf("%w (and removing the new box %s failed: %v; run `hermes box rm %s`)", err, QuoteName(taskID), rerr, QuoteName(taskID))
		}
		return err
	}
	if err := os.Remove(marker); err != nil {
		return err
	}
	return syncDirPath(dir)
}

// syncDirPath fsyncs directory dir, making a file created or removed in
// it durable.
func syncDirPath(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// removeStaleRestores removes the directories an interrupted restore
// left beside the layer's upper dir (upper.restore-*, see
// snapshot.ReplaceUpper): they take the box's disk space. layerRoot is
// the mounted layer's root; the caller holds the box's state lock, so no
// restore runs into it.
func removeStaleRestores(layerRoot string) error {
	entries, err := os.ReadDir(layerRoot)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "upper.restore-") {
			errs = append(errs, os.RemoveAll(filepath.Join(layerRoot, e.Name())))
		}
	}
	return errors.Join(errs...)
}
