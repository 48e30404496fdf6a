package box

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/hermes-go/hermes/internal/protect"
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
	if !b.Attached() {
		saveBaseline(b.stateDir, b.watch) // accepted: kept after a crash too
	}
}

// CheckProtected moves aside what the commands left in the bind workspace
// that makes the host run code later (protect.Watch.Check, as after each
// Exec) and returns the note, or "": for commands whose end the caller
// sees (hermes box exec, box shell). An attached box checks only once
// WatchAttached gave it a Watch.
func (b *Box) CheckProtected() string {
	return b.watch.Check()
}

// WatchAttached gives a box attached from this process (hermes box exec or
// box shell into a box hermes box start or an agent session runs, an
// agent session attaching to one) a Watch of its bind workspace as of now,
// with this process's terminal.protected_paths: its Exec and
// CheckProtected then check after each command as the owner does. A
// box's own Watch, an overlay workspace or an init that does not say
// (AttachInfo.BindWorkspace) are left alone.
func (b *Box) WatchAttached(protected []string) {
	if !b.Attached() || !b.bindWorkspace || b.watch != nil || b.workdir == "" {
		return
	}
	b.watch = protect.New(protected).Watch(b.workdir, true)
}

// NotesTo sends the notes of the workspace checks no command's output
// carries (the check at the box's stop, the notice of a cut-off scan) to
// w, the person's side (hermes box exec's standard error); by default
// they go to os.Stderr.
func (b *Box) NotesTo(w io.Writer) {
	b.watch.WarnTo(w)
}
