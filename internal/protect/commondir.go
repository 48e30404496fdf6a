package protect

import "os"

// A repository's .git/commondir makes git read its config and hooks from
// the directory the file names (gitrepository-layout(5)); a main
// repository has none. A command (in a box with the bind workspace, or
// under the local guard) that writes one makes the user's next `git
// status` on the host run whatever that directory's config says
// (core.fsmonitor). It is a protected path, but a name that does not exist
// cannot carry a read-only mount, so after each command the backend moves
// a .git/commondir that was not there when it started aside, to
// .git/commondir.refused-by-hermes, and says so in the command's output.
// A background command may still write one after the check; the next
// command's check moves it.
const (
	GitCommondir        = ".git/commondir"
	GitCommondirRefused = ".git/commondir.refused-by-hermes"
)

// CommondirPresent reports whether workspace's .git is a directory holding
// a commondir entry (of any type), when s protects .git/commondir.
func (s Set) CommondirPresent(workspace string) bool {
	if workspace == "" {
		return false
	}
	if _, ok := s.Match(GitCommondir, false); !ok {
		return false
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return false
	}
	defer root.Close()
	if st, err := root.Lstat(".git"); err != nil || !st.IsDir() {
		return false
	}
	_, err = root.Lstat(GitCommondir)
	return err == nil
}

// MoveCommondirAside moves workspace's .git/commondir aside (see above)
// unless it was there when the backend started (hadAtStart), and returns
// the note for the command's output, or "" when there was none. It stays
// beneath the workspace (os.Root).
func (s Set) MoveCommondirAside(workspace string, hadAtStart bool) string {
	if hadAtStart || !s.CommondirPresent(workspace) {
		return ""
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return ""
	}
	defer root.Close()
	if err := root.Rename(GitCommondir, GitCommondirRefused); err != nil {
		return "hermes: the command wrote .git/commondir (git would read config and hooks from the directory it names) and hermes could not move it aside: " + err.Error() + "; remove it on the host before running git"
	}
	return "hermes: the command wrote .git/commondir (git would read config and hooks from the directory it names, a protected path); hermes moved it to " + GitCommondirRefused
}
