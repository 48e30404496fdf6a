package box

import (
	"io"
	"os"
	"path/filepath"

	"github.com/hermes-go/hermes/internal/protect"
)

// uncheckedBaseline is the file in a box's state dir that holds the
// baseline of its bind workspace (protect.Watch.Baseline) from the box's
// start until its stop has checked the workspace. When hermes dies before
// that check (SIGKILL, a crash), the next start of the box finds it and
// keeps that baseline instead of taking the workspace as it is then, so
// what the dead session's commands left is still moved aside (attacker
// trial, 2026-12-06: the next start took a planted git config for the
// user's own).
const uncheckedBaseline = "workspace-unchecked.json"

// resumeWatch returns the Watch of a box starting in state dir dir: the
// baseline an earlier start of the box left unchecked, when there is one
// of this workspace, checked at once (what it moves aside is said on
// stderr), else fresh, whose baseline is saved now. An unreadable leftover
// is replaced by fresh.
func resumeWatch(dir, workspace string, set protect.Set, fresh *protect.Watch) *protect.Watch {
	if fresh == nil {
		return nil
	}
	path := filepath.Join(dir, uncheckedBaseline)
	if data, err := os.ReadFile(path); err == nil {
		if old, err := set.ResumeWatch(workspace, data); err == nil && old != nil {
			old.CheckForPerson() // before any command of this start
			return old
		}
	}
	saveBaseline(dir, fresh)
	return fresh
}

// saveBaseline writes w's baseline to dir's uncheckedBaseline (0600,
// replaced whole).
func saveBaseline(dir string, w *protect.Watch) {
	tmp := filepath.Join(dir, uncheckedBaseline+".tmp")
	if err := os.WriteFile(tmp, w.Baseline(), 0o600); err == nil {
		os.Rename(tmp, filepath.Join(dir, uncheckedBaseline))
	}
}

// checkLeftBaseline checks the bind workspace against the baseline an
// earlier start of the box in state dir dir left unchecked (its hermes
// was killed before the box's stop), with set (this process's
// terminal.protected_paths): what that session's commands left is moved
// aside and said to out (os.Stderr when nil) before the state, and the
// baseline with it, goes (Manager.Remove). Nothing happens without such a baseline.
func checkLeftBaseline(dir string, set protect.Set, out io.Writer) {
	data, err := os.ReadFile(filepath.Join(dir, uncheckedBaseline))
	if err != nil {
		return
	}
	if w, err := set.ResumeWatch(protect.SavedWorkspace(data), data); err == nil && w != nil {
		w.WarnTo(out)
		w.CheckForPerson()
	}
}
