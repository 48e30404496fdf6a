package skills

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hermes-go/hermes/internal/workspacefile"
)

// tree reads the files of a root. The project root (<workdir>/.hermes/
// skills) is workspace content a command or a box may have written, so it
// is read through a workspacefile.Reader on the working directory: a
// skill folder, SKILL.md or skill file that is a link out of the
// workspace, a hard link to HERMES_HOME's secrets, a FIFO or a device is
// refused. HERMES_HOME's and external roots are the user's and are read
// from the host file system (symlinked skill folders allowed), bounded
// and without opening FIFOs or devices.
type tree struct {
	ws *workspacefile.Reader // nil: the host file system
}

// openTree returns the tree of root; close it when done.
func openTree(root Root) (tree, error) {
	if root.Kind != Project || root.Workspace == "" {
		return tree{}, nil
	}
	r, err := workspacefile.Open(root.Workspace, root.HermesHome)
	if err != nil {
		return tree{}, err
	}
	return tree{ws: r}, nil
}

func (t tree) close() {
	if t.ws != nil {
		t.ws.Close()
	}
}

// readDir lists dir (absolute).
func (t tree) readDir(dir string) ([]fs.DirEntry, error) {
	if t.ws != nil {
		return t.ws.ReadDir(dir)
	}
	return os.ReadDir(dir)
}

// stat describes p (absolute), following links.
func (t tree) stat(p string) (fs.FileInfo, error) {
	if t.ws != nil {
		return t.ws.Stat(p)
	}
	return os.Stat(p)
}

// readFile returns the regular file p (absolute), at most limit bytes.
func (t tree) readFile(p string, limit int64) ([]byte, error) {
	if t.ws != nil {
		return t.ws.ReadFile(p, limit)
	}
	return workspacefile.ReadHostFile(p, limit)
}

// isDir reports whether the entry e of parent is a directory or a link
// to one (in the project root, a link that stays in the workspace).
func (t tree) isDir(parent string, e fs.DirEntry) (bool, error) {
	if e.IsDir() {
		return true, nil
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false, nil
	}
	st, err := t.stat(filepath.Join(parent, e.Name()))
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}

// exists reports whether p exists; a refusal is returned as an error.
func (t tree) exists(p string) (bool, error) {
	_, err := t.stat(p)
	if errors.Is(err, workspacefile.ErrRefused) {
		return false, err
	}
	return err == nil, nil
}
