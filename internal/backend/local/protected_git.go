package local

// A .git/commondir written by a guarded command is moved aside after the
// command (protect.Set.MoveCommondirAside says why).

// commondirPresent reports whether the workspace's .git holds a
// commondir entry that terminal.protected_paths protects.
func (g *guard) commondirPresent() bool {
	return g != nil && g.protected.CommondirPresent(g.workspace)
}

// moveGitRedirectAside moves a .git/commondir created since the backend
// started aside and returns the note for the command's output, or "".
func (g *guard) moveGitRedirectAside() string {
	if g == nil {
		return ""
	}
	return g.protected.MoveCommondirAside(g.workspace, g.hadCommondir)
}
