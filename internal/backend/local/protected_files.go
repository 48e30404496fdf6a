package local

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxProtectedFiles bounds the files enumerated inside HERMES_HOME's
// protected directories (secrets/, mcp-tokens/, pairing/) by
// LoadProtectedFiles; a store holds a handful.
const maxProtectedFiles = 4096

// ProtectedFiles is the set of HERMES_HOME's protected files, by device
// and inode, for host-side readers that must not hand them out whatever
// name, symlink or hard link leads to them (workspacefile). It holds the
// protected entries the file tools refuse (IsProtectedName, see
// Environment.ReadFile) and, in addition, the files inside the protected
// directories: a hard link to secrets/secrets.json has its own name but
// the same inode.
type ProtectedFiles struct {
	ids map[fileID]bool
}

// LoadProtectedFiles stats HERMES_HOME's protected entries as they are
// now (hermes replaces them atomically, which changes their inode, so a
// reader loads the set when it starts). An empty hermesHome, or one that
// does not exist, protects nothing. Symlinks in hermesHome are resolved.
func LoadProtectedFiles(hermesHome string) (*ProtectedFiles, error) {
	pf := &ProtectedFiles{ids: map[fileID]bool{}}
	if hermesHome == "" {
		return pf, nil
	}
	p, err := (&Environment{hermesHome: realPath(hermesHome)}).protection()
	if err != nil {
		return nil, err
	}
	for id := range p.secret {
		pf.ids[id] = true
	}
	budget := maxProtectedFiles
	for _, name := range []string{"secrets", "mcp-tokens", "pairing"} {
		pf.addTree(filepath.Join(realPath(hermesHome), name), 3, &budget)
	}
	return pf, nil
}

// addTree adds the identities of the entries under dir, depth levels
// deep, without following symlinks, at most *budget of them.
func (pf *ProtectedFiles) addTree(dir string, depth int, budget *int) {
	if depth == 0 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		if *budget <= 0 {
			return
		}
		*budget--
		var st unix.Stat_t
		p := filepath.Join(dir, ent.Name())
		if unix.Lstat(p, &st) != nil {
			continue
		}
		pf.ids[idOf(st)] = true
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			pf.addTree(p, depth-1, budget)
		}
	}
}

// Contains reports whether the file described by st (an fstat of what was
// opened) is one of the protected files.
func (pf *ProtectedFiles) Contains(st *unix.Stat_t) bool {
	return pf != nil && pf.ids[idOf(*st)]
}
