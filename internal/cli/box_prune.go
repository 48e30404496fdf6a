package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/store"
)

// sessionBox is the box state a session left: a box is named by the id of
// the session it serves (HERMES_HOME/boxes/<session id>).
func (a *App) sessionBox(id string) (box.BoxInfo, bool) {
	boxes, err := box.ListBoxes(a.Home())
	if err != nil {
		return box.BoxInfo{}, false
	}
	for _, b := range boxes {
		if b.Task == id {
			return b, true
		}
	}
	return box.BoxInfo{}, false
}

// removeBoxes deletes the boxes of tasks (their state and persistent
// layers) with one box manager.
func (a *App) removeBoxes(tasks []string) error {
	t, err := a.boxTerminalConfig()
	if err != nil {
		return err
	}
	m, err := box.NewManager(box.Options{Terminal: t, Home: a.Home(), Executable: a.Executable})
	if err != nil {
		return err
	}
	defer m.Close()
	var errs []error
	for _, task := range tasks {
		errs = append(errs, m.Remove(task))
	}
	return errors.Join(errs...)
}

// deleteSessionBox deletes the box of the deleted session id, as
// `sessions delete` does: asked on a terminal (unless --yes), kept with
// --keep-box, deleted otherwise (a script that deletes a session has no
// use for its box, and nothing else ever deletes it). A failure is told,
// not returned: the session is gone either way.
func (a *App) deleteSessionBox(id string, keep, yes bool) {
	b, ok := a.sessionBox(id)
	if !ok {
		return
	}
	size := fmt.Sprintf("%.1f MiB", float64(b.DiskBytes)/(1<<20))
	switch {
	case keep:
		fmt.Fprintf(a.Stdout, "Kept its box (%s); `hermes box rm %s` deletes it.\n", size, id)
		return
	case b.InUse:
		fmt.Fprintf(a.Stderr, "hermes: the session's box %s is in use by a hermes process: kept; `hermes box rm %s` deletes it once that process ends\n", id, id)
		return
	case a.IsTerminal && !yes:
		fmt.Fprintf(a.Stdout, "Delete its box too (%s)? [Y/n] ", size)
		line, _ := bufio.NewReader(a.Stdin).ReadString('\n')
		if answer := strings.ToLower(strings.TrimSpace(line)); answer != "" && answer != "y" && answer != "yes" {
			fmt.Fprintf(a.Stdout, "Kept its box; `hermes box rm %s` deletes it.\n", id)
			return
		}
	}
	if err := a.removeBoxes([]string{id}); err != nil {
		fmt.Fprintf(a.Stderr, "hermes: the session's box %s was not deleted: %v; delete it with `hermes box rm %s`\n", id, err, id)
		return
	}
	fmt.Fprintf(a.Stdout, "Deleted its box (%s).\n", size)
}

// newBoxPruneCmd is `hermes box prune`: it deletes the boxes of sessions
// that are gone (deleted, or never stored) and, with --older-than, those
// of sessions idle for longer (the box's state last changed before then).
// Only boxes named by a session id are considered; boxes in use are
// skipped; other boxes (`box exec --new NAME`, sandbox serve's) are left
// to `hermes box rm`.
func (a *App) newBoxPruneCmd() *cobra.Command {
	var (
		olderThan time.Duration
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "delete the boxes of deleted sessions (and with --older-than, of sessions idle that long)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan < 0 {
				return fmt.Errorf("--older-than %s: give a positive duration, e.g. 720h for 30 days", olderThan)
			}
			var doomed []string
			var freed int64
			err := a.withSessionStore(func(st store.Store) error {
				var err error
				doomed, freed, err = a.prunable(cmd.Context(), st, olderThan, time.Now())
				return err
			})
			if err != nil {
				return err
			}
			for _, task := range doomed {
				fmt.Fprintln(a.Stdout, map[bool]string{true: "would remove", false: "removing"}[dryRun], task)
			}
			if !dryRun && len(doomed) > 0 {
				if err := a.removeBoxes(doomed); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.Stdout, "%d box(es), %.1f MiB%s\n", len(doomed), float64(freed)/(1<<20),
				map[bool]string{true: " would be freed", false: " freed"}[dryRun])
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "also delete boxes of sessions idle longer than this (e.g. 168h)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted and delete nothing")
	return cmd
}

// prunable lists the boxes prune deletes (see newBoxPruneCmd) and the
// bytes their layers use.
func (a *App) prunable(ctx context.Context, st store.Store, olderThan time.Duration, now time.Time) ([]string, int64, error) {
	boxes, err := box.ListBoxes(a.Home())
	if err != nil {
		return nil, 0, err
	}
	var out []string
	var bytes int64
	for _, b := range boxes {
		if b.InUse || b.RestoreOf != "" || !store.IsSessionID(b.Task) {
			continue
		}
		_, err := st.Session(ctx, b.Task)
		gone := errors.Is(err, store.ErrNotFound)
		if err != nil && !gone {
			return nil, 0, err
		}
		if !gone && (olderThan == 0 || !idleSince(filepath.Join(a.Home(), "boxes", b.Task), now.Add(-olderThan))) {
			continue
		}
		out = append(out, b.Task)
		bytes += b.DiskBytes
	}
	return out, bytes, nil
}

// idleSince reports whether nothing in the box state dir (its layer image
// included) changed after t.
func idleSince(dir string, t time.Time) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	latest := time.Time{}
	if fi, err := os.Stat(dir); err == nil {
		latest = fi.ModTime()
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.ModTime().After(latest) {
			latest = fi.ModTime()
		}
	}
	return latest.Before(t)
}
