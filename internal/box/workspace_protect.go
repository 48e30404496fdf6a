package box

import "github.com/hermes-go/hermes/internal/protect"

// moveCommondirAside: with the bind workspace, a .git/commondir the box
// wrote (the host's git would read config and hooks from the directory it
// names; a missing name cannot carry a read-only mount) is moved aside on
// the host after each command (protect.Set.MoveCommondirAside).
func (b *Box) moveCommondirAside() string {
	if b.spec.WorkspaceOverlay || b.spec.Workspace == "" {
		return ""
	}
	return protect.New(b.spec.Protected).MoveCommondirAside(b.spec.Workspace, b.hadCommondir)
}
