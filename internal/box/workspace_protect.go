package box

import (
	"path/filepath"
	"strings"
)

// AcceptProtectedWrite records that abs, a protected path in the bind
// workspace, was written with the user's approval (write_file, patch), so
// the check after the next command (Box.watch) leaves it in place.
func (b *Box) AcceptProtectedWrite(abs string) {
	if b.watch == nil {
		return
	}
	rel, err := filepath.Rel(b.spec.Workspace, filepath.Clean(abs))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return
	}
	b.watch.Accept(filepath.ToSlash(rel))
}

// CheckProtected moves aside what the commands left in the bind workspace
// that makes the host run code later (protect.Watch.Check, as after each
// Exec) and returns the note, or "": for commands whose end the caller
// sees (hermes box exec, box shell). An attached box has no Watch: the
// hermes process that started it checks after its own next command.
func (b *Box) CheckProtected() string {
	return b.watch.Check()
}
