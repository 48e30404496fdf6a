package local

import "os"

// A repository's .git/commondir makes git read its config and hooks from
// the directory the file names (gitrepository-layout(5)); a main
// repository has none. A guarded command that writes one makes the user's
// next `git status` on the host run whatever that directory's config says
// (core.fsmonitor). It is a protected path, but a name that does not exist
// cannot carry a read-only mount, so after each command the backend moves
// a .git/commondir that was not there when it started aside, to
// .git/commondir.refused-by-hermes, and says so in the command's output.
// A background command may still write one after the check; the next
// command's check moves it.
const (
	gitCommondir        = ".git/commondir"
	gitCommondirRefused = ".git/commondir.refused-by-hermes"
)

// commondirPresent reports whether the workspace's .git is a directory
// holding a commondir entry (of any type).
func (g *guard) commondirPresent() bool {
	if g == nil || g.workspace == "" {
		return false
	}
	if _, ok := g.protected.Match(gitCommondir, false); !ok {
		return false
	}
	root, err := os.OpenRoot(g.workspace)
	if err != nil {
		return false
	}
	defer root.Close()
	if st, err := root.Lstat(".git"); err != nil || !st.IsDir() {
		return false
	}
	_, err = root.Lstat(gitCommondir)
	return err == nil
}

// moveGitRedirectAside moves a .git/commondir created since the backend
// started aside (see above) and returns the note for the command's output,
// or "" when there was none. It stays beneath the workspace (os.Root).
func (g *guard) moveGitRedirectAside() string {
	if g == nil || g.hadCommondir || !g.commondirPresent() {
		return ""
	}
	root, err := os.OpenRoot(g.workspace)
	if err != nil {
		return ""
	}
	defer root.Close()
	if err := root.Rename(gitCommondir, gitCommondirRefused); err != nil {
		return "hermes: the command wrote .git/commondir (git would read config and hooks from the directory it names) and hermes could not move it aside: " + err.Error() + "; remove it on the host before running git"
	}
	return "hermes: the command wrote .git/commondir (git would read config and hooks from the directory it names, a protected path); hermes moved it to " + gitCommondirRefused
}
