package local

import (
	"fmt"
	"io"

	"github.com/hermes-go/hermes/internal/protect"
	"golang.org/x/sys/unix"
)

// Protected paths (terminal.protected_paths, issue 23) under the local
// backend: files such as .git/config and .git/hooks/ make the host run
// code later (the user's next `git status`), so guarded commands must not
// write them even though they lie inside the writable workspace.
//
// Landlock cannot express that: its rules only add access to trees, so a
// right granted on the workspace holds for every path below it, and the
// only way to withhold a subpath would be to grant each sibling on its own,
// which leaves the workspace root itself without the right to create new
// files. So each command gets a mount namespace of its own instead: the
// guard's thread unshares CLONE_NEWNS, makes every mount private, binds the
// workspace and the directories on the way to each entry over themselves
// (mount points cannot be renamed or removed), and binds each existing
// entry read-only over itself (protect.Set.MountReadOnly); then it applies
// Landlock, which also forbids the command to unmount anything, and forks
// the command. The namespace dies with the thread after the command.
//
// Making a mount namespace needs CAP_SYS_ADMIN, so this holds when hermes
// runs as root; otherwise NewWithOptions says once that the protected paths
// are guarded by the approvals and the file tools only.

// hasSysAdmin reports whether the calling thread has CAP_SYS_ADMIN in its
// effective set (what unshare(CLONE_NEWNS) needs).
func hasSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	const word, bit = unix.CAP_SYS_ADMIN / 32, uint32(1) << (unix.CAP_SYS_ADMIN % 32)
	return data[word].Effective&bit != 0
}

// setProtected records the protected paths of the workspace ws (resolved)
// and whether this process can enforce them, warning on warn when it
// cannot.
func (g *guard) setProtected(paths []string, ws string, canMount bool, warn io.Writer) {
	set := protect.New(paths)
	if set.Empty() || g.mode != SandboxWorkspaceWrite {
		return // read-only: nothing in the workspace is writable anyway
	}
	g.protected, g.workspace = set, realPath(ws)
	g.watch = set.Watch(g.workspace, canMount)
	g.watch.WarnTo(warn) // a cut-off scan is told to the person too
	if canMount {
		g.protectMounts = true
		return
	}
	fmt.Fprintln(warn, "hermes: warning: terminal.protected_paths (.git/config, .git/hooks/, …) cannot be made read-only for local commands without root (a mount namespace needs CAP_SYS_ADMIN); the file tools and the approvals still ask before they are written, and hermes moves aside git settings and protected files that commands create (use terminal.backend: box to have the kernel enforce them)")
}

// mountProtected runs on the guard's locked thread before the command is
// forked: it gives the thread a private mount namespace in which the
// workspace's protected paths are read-only.
func (g *guard) mountProtected() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("terminal.protected_paths: mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("terminal.protected_paths: make mounts private: %w", err)
	}
	open := func() (int, error) {
		return unix.Open(g.workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	// The workspace itself becomes a mount point: it cannot be renamed
	// away and replaced by a directory of the command's making.
	fd, err := open()
	if err != nil {
		return fmt.Errorf("terminal.protected_paths: open workspace %s: %w", g.workspace, err)
	}
	p := fmt.Sprintf("/proc/self/fd/%d", fd)
	err = unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, "")
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("terminal.protected_paths: bind workspace %s: %w", g.workspace, err)
	}
	// What the repository's own config points to in the workspace
	// (core.hooksPath, include.path, hooks linked to tools/pre-commit)
	// is read-only too, as of this command's start.
	set := g.protected.With(g.protected.Pointed(g.workspace))
	if _, err := set.MountReadOnly(open); err != nil {
		return fmt.Errorf("terminal.protected_paths in %s: %w (to run commands without that protection: hermes config set terminal.protected_paths [])", g.workspace, err)
	}
	return nil
}
