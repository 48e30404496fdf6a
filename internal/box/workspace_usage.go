package box

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// runningWorkspaceRecord names the file in a box's state dir holding the
// workspace of its latest start and its terminal.box_workspace mode
// ("bind\n/path"), for hermes box stats.
const runningWorkspaceRecord = "workspace.started"

// maxUsageEntries bounds the walk of WorkspaceUsage.
const maxUsageEntries = 1_000_000

// WorkspaceInfo is the disk use of a box's workspace on the host.
type WorkspaceInfo struct {
	Path string
	// Mode is terminal.box_workspace: "bind" (the box writes the host
	// directory: terminal.container_disk does not limit it) or "overlay"
	// (the box's changes live in its layer, within container_disk).
	Mode string
	// Bytes are the blocks the files under Path use (hard links counted
	// once per name).
	Bytes int64
	// Partial is set when the walk stopped after maxUsageEntries entries.
	Partial bool
}

// recordStartedWorkspace notes the workspace of a starting box.
func recordStartedWorkspace(dir, ws string, overlay bool) {
	mode := "bind"
	if overlay {
		mode = "overlay"
	}
	os.WriteFile(filepath.Join(dir, runningWorkspaceRecord), []byte(mode+"\n"+ws), 0o600)
}

// WorkspaceUsage measures the host workspace of the box task of HERMES_HOME
// home, as recorded at its latest start; the error wraps fs.ErrNotExist
// when there is no record.
func WorkspaceUsage(home, task string) (WorkspaceInfo, error) {
	if err := checkTaskID(task); err != nil {
		return WorkspaceInfo{}, err
	}
	b, err := os.ReadFile(filepath.Join(home, "boxes", task, runningWorkspaceRecord))
	if err != nil {
		return WorkspaceInfo{}, err
	}
	mode, path, ok := strings.Cut(string(b), "\n")
	if !ok || !filepath.IsAbs(path) {
		return WorkspaceInfo{}, errors.New("box " + task + ": malformed " + runningWorkspaceRecord)
	}
	info := WorkspaceInfo{Path: path, Mode: mode}
	n := 0
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skipped
		}
		if n++; n > maxUsageEntries {
			info.Partial = true
			return filepath.SkipAll
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				info.Bytes += st.Blocks * 512
			}
		}
		return nil
	})
	return info, err
}
