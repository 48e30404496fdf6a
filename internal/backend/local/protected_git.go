package local

import (
	"path/filepath"
	"strings"
)

// After each guarded command the host moves aside what the command left
// in the workspace that makes the host run code later and that no
// read-only mount could cover (protect.Watch): a nested repository whose
// config or hooks run code, a new .git/commondir, a gitfile naming a
// directory outside, a protected entry that did not exist at the start.

// checkWorkspace runs the check and returns the note for the command's
// output, or "".
func (g *guard) checkWorkspace() string {
	if g == nil {
		return ""
	}
	return g.watch.Check()
}

// AcceptProtectedWrite records that hermes itself wrote abs (a path in
// the workspace) on the host after the user approved the write to a
// protected path, so the check after the next command leaves it in place.
func (e *Environment) AcceptProtectedWrite(abs string) {
	if e.guard == nil || e.guard.watch == nil {
		return
	}
	rel, err := filepath.Rel(e.guard.workspace, realPath(abs))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return
	}
	e.guard.watch.Accept(filepath.ToSlash(rel))
}

// finalCheck runs the check when a session or the backend closes, with
// the note for the person (nobody reads a command's output for it).
func (g *guard) finalCheck() {
	if g == nil {
		return
	}
	g.watch.CheckForPerson()
}
