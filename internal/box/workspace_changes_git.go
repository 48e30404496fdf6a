package box

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/hermes-go/hermes/internal/protect"
)

// markProtected sets Protected on the changes (of upper, the overlay's
// upper directory, over host workspace ws) that apply would make files
// running code on the host:
//
//   - paths under terminal.protected_paths, and under the files the host
//     repository's config points to in the workspace (protect.Set.Pointed:
//     core.hooksPath, include.path, linked hooks);
//   - paths in a directory that git would take for a git directory once
//     applied (HEAD with objects and refs, or with a commondir, whatever
//     their type: git follows links), matched as if they were in .git/:
//     a bare-layout e/config, the workspace root's own config when a
//     change spoils .git/HEAD and plants HEAD, objects and refs at the
//     top, a submodule's .git/modules/<name>/config, and a git
//     directory's config.worktree, which git reads with its config.
func (m *Manager) markProtected(ws, upper string, changes []WorkspaceChange) {
	base := protect.New(m.opts.Terminal.ProtectedPaths)
	if base.Empty() {
		return
	}
	set := base.With(base.Pointed(ws))
	v := newMergedView(ws, upper)
	defer v.close()
	for i := range changes {
		c := &changes[i]
		c.Protected, _ = set.Match(c.Path, true)
		if c.Protected != "" || c.Kind == ChangeDeleted {
			continue
		}
		for d := path.Dir(c.Path); ; d = path.Dir(d) {
			if v.isGitDir(d) {
				rel := strings.TrimPrefix(c.Path, d+"/")
				if rel == "config.worktree" { // read with config (extensions.worktreeConfig)
					rel = "config"
				}
				c.Protected, _ = set.Match(".git/"+rel, false)
				if c.Protected != "" {
					break
				}
			}
			if d == "." {
				break
			}
		}
	}
}

// mergedView answers whether a workspace path exists once the upper
// directory's changes are applied: its entry in upper, unless a whiteout,
// else the host's; neither is followed through links (os.Root).
type mergedView struct {
	host, upper *os.Root
	gitDirs     map[string]bool
}

func newMergedView(ws, upper string) *mergedView {
	v := &mergedView{gitDirs: map[string]bool{}}
	v.host, _ = os.OpenRoot(ws)
	v.upper, _ = os.OpenRoot(upper)
	return v
}

func (v *mergedView) close() {
	for _, r := range []*os.Root{v.host, v.upper} {
		if r != nil {
			r.Close()
		}
	}
}

func (v *mergedView) exists(rel string) bool {
	if v.upper != nil {
		st, err := v.upper.Lstat(rel)
		if err == nil {
			return !(st.Mode()&fs.ModeCharDevice != 0 && st.Mode()&fs.ModeDevice != 0) // a whiteout is a deletion
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return true // fail closed
		}
	}
	if v.host == nil {
		return false
	}
	_, err := v.host.Lstat(rel)
	return err == nil
}

// isGitDir reports whether dir (relative to the workspace) holds HEAD and
// objects and refs, or HEAD and commondir (protect's isRepositoryLayout).
func (v *mergedView) isGitDir(dir string) bool {
	if got, ok := v.gitDirs[dir]; ok {
		return got
	}
	has := func(name string) bool { return v.exists(path.Join(dir, name)) }
	got := has("HEAD") && (has("objects") && has("refs") || has("commondir"))
	v.gitDirs[dir] = got
	return got
}
