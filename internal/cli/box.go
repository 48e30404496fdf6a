package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/registry"
	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/box/snapshot"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/protect"
)

// newBoxManager builds the box backend for terminal config t
// (registry.NewBoxManager), for workspace cwd ("" = t.Cwd).
func (a *App) newBoxManager(t config.TerminalConfig, cwd string, prestart bool, with ...func(*box.Options)) (*box.Manager, error) {
	return registry.NewBoxManager(a.backendDeps(), t, cwd, prestart, with...)
}

// lookupEnv reads the host environment through App.Getenv (an empty
// value counts as unset), for terminal.env_passthrough.
func (a *App) lookupEnv(name string) (string, bool) {
	v := a.Getenv(name)
	return v, v != ""
}

// boxTerminalConfig loads config.yaml's terminal section.
func (a *App) boxTerminalConfig() (config.TerminalConfig, error) {
	l, err := config.Load(a.Home(), config.LoadOptions{Getenv: a.Getenv})
	if err != nil {
		return config.TerminalConfig{}, err
	}
	return l.Config.Terminal, nil
}

func (a *App) newBoxCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "box", Short: "manage hermes boxes (sandboxes): ls, start, stop, exec, shell, port, rm, prune, stats, snapshot(s), restore, fork, diff, apply"}
	cmd.AddCommand(a.newBoxLsCmd(), a.newBoxStartCmd(), a.newBoxStopCmd(), a.newBoxExecCmd(), a.newBoxShellCmd(), a.newBoxPortCmd(), a.newBoxRmCmd(),
		a.newBoxStatsCmd(), a.newBoxSnapshotCmd(), a.newBoxSnapshotsCmd(), a.newBoxRestoreCmd(), a.newBoxForkCmd(),
		a.newBoxDiffCmd(), a.newBoxApplyCmd(), a.newBoxImageCmd(), a.newBoxPruneCmd())
	return cmd
}

func (a *App) newBoxLsCmd() *cobra.Command {
	return &cobra.Command{
		Use: "ls", Short: "list boxes and their persistent layers (and clean up after crashed hermes processes)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.reportLeftovers(box.CleanLeftovers(a.Home()))
			boxes, err := box.ListBoxes(a.Home())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TASK\tPERSISTENT\tDISK\tIMAGE\tSTATE\tPORTS")
			for _, b := range boxes {
				state := "stopped"
				switch {
				case b.RestoreOf != "" && b.InUse:
					state = "restoring " + b.RestoreOf
				case b.RestoreOf != "":
					state = fmt.Sprintf("incomplete (restore of %s interrupted): hermes box rm %s", b.RestoreOf, box.QuoteName(b.Task))
				case b.InUse:
					state = "running"
				}
				state, ports := a.startedBoxColumns(b.Task, state)
				fmt.Fprintf(w, "%s\t%v\t%.1f MiB\t%s\t%s\t%s\n", box.QuoteName(b.Task), b.Persistent, float64(b.DiskBytes)/(1<<20), a.boxImageColumn(b.Task), state, ports)
			}
			return w.Flush()
		},
	}
}

// reportLeftovers tells on stderr what box.CleanLeftovers removed and
// what it found but left alone.
func (a *App) reportLeftovers(l box.Leftovers) {
	if n := len(l.Removed) + len(l.Files); n > 0 {
		fmt.Fprintf(a.Stderr, "hermes: removed %d cgroups and %d prestart files left by hermes processes that ended without closing their boxes\n", len(l.Removed), len(l.Files))
	}
	for _, d := range l.Busy {
		fmt.Fprintf(a.Stderr, "hermes: cgroup %s belongs to an ended hermes process but still has processes: left alone (kill them, then run hermes box ls again)\n", d)
	}
	// Mounts first: a mounted loop device cannot be detached (losetup -d
	// only marks it autoclear); unmounting it detaches it.
	for _, d := range l.Mounts {
		fmt.Fprintf(a.Stderr, "hermes: %s is mounted under the box state (left by a killed hermes; a box start refuses its image meanwhile): unmount it with `umount %s` (its loop device then detaches)\n", d, d)
	}
	for _, d := range l.Loops {
		dev, img, _ := strings.Cut(d, " ")
		fmt.Fprintf(a.Stderr, "hermes: loop device %s is attached to box image %s but no box runs: unmount it where it is mounted (above, or `grep -l %s /proc/*/mountinfo`), else detach it with `losetup -d %s`; then check the image with `e2fsck -f %s`\n",
			dev, img, strings.TrimPrefix(dev, "/dev/"), dev, img)
	}
}

// parsePublish parses HOSTPORT:BOXPORT (box exec --publish, box port).
func parsePublish(s string) (host string, boxPort int, err error) {
	h, b, ok := strings.Cut(s, ":")
	hp, err1 := strconv.Atoi(h)
	bp, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || hp < 0 || hp > 65535 || bp < 1 || bp > 65535 {
		return "", 0, fmt.Errorf("port mapping %q: want HOSTPORT:BOXPORT, e.g. 8080:3000", s)
	}
	return "127.0.0.1:" + h, bp, nil
}

// withBox opens the box of task and calls fn. When another hermes process
// runs the box, withBox attaches to it (box.Attach: the owner's limits,
// workspace and environment apply, and the box keeps running afterwards),
// unless fn runs commands (runs) and the box's workspace is not the one
// this command would use (Box.CheckWorkspace).
// Otherwise it starts the box with the configured terminal section and
// stops it afterwards (its persistent layer is kept), once the commands
// other processes attached to it run have ended (Box.WaitAttached). With persistent
// boxes (terminal.container_persistent, the default) a task without a box
// is an error unless create is set (--new): a typo must not silently
// create a persistent box.
func (a *App) withBox(ctx context.Context, task string, create, runs bool, publish []string, fn func(b *box.Box) error) error {
	return a.withBoxImage(ctx, task, "", create, runs, publish, fn)
}

// withBoxImage is withBox with image, when not "", as the box's
// terminal.box_image (--image; see checkBoxImageFlag).
func (a *App) withBoxImage(ctx context.Context, task, image string, create, runs bool, publish []string, fn func(b *box.Box) error) error {
	t, err := a.boxTerminalConfig()
	if err != nil {
		return err
	}
	for _, p := range publish { // before a box is made for a typo
		if _, _, err := parsePublish(p); err != nil {
			return err
		}
	}
	if image != "" {
		if err := a.checkBoxImageFlag(task, image, create); err != nil {
			return err
		}
		t.BoxImage = image
	}
	if b, err := box.Attach(ctx, a.Home(), task); err == nil {
		err := a.runAttached(b, t, runs, publish, fn)
		if !errors.Is(err, box.ErrNotRunning) {
			return err
		}
		// Its owner was stopping the box and refused the command before
		// it started: start the box afresh for it (m.Box waits for the
		// owner to release it).
	} else if !errors.Is(err, box.ErrNotRunning) {
		return err
	}
	if enabled(t.ContainerPersistent) && !create {
		boxes, err := box.ListBoxes(a.Home())
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(boxes, func(b box.BoxInfo) bool { return b.Task == task }) {
			if name, ok := onlyPrefixMatch(boxes, task); ok {
				return fmt.Errorf("no box named %s; did you mean %s? (hermes box ls lists them)", box.QuoteName(task), box.QuoteName(name))
			}
			return fmt.Errorf("no box for task %q (hermes box ls lists them); to create it, run: hermes box exec --new %s -- CMD", task, task)
		}
	}
	m, err := a.newBoxManager(t, "", false)
	if err != nil {
		return err
	}
	defer m.Close()
	_, statErr := os.Stat(m.StateDir(task))
	b, err := m.Box(ctx, task)
	if err == nil {
		err = a.publishPorts(b, publish)
	}
	if err != nil {
		// A box this command made goes again when its setup failed (a
		// port taken, an image that does not start): nothing is left in
		// hermes box ls.
		if errors.Is(statErr, fs.ErrNotExist) {
			m.Remove(task)
		}
		return err
	}
	b.NotesTo(a.Stderr) // what the check at its stop moves aside
	err = fn(b)
	// Commands other hermes processes started in this box would die with
	// it: wait for them (a signal to hermes stops waiting).
	b.WaitAttached(ctx, func(n int) {
		// The stop's check waits for them: check what this command
		// left now, in case hermes does not live to the stop.
		a.checkBoxWorkspace(b)
		fmt.Fprintf(a.Stderr, "hermes: waiting for %d command(s) other hermes processes run in box %s before stopping it (interrupt to stop it now)\n", n, task)
	})
	return err
}

// onlyPrefixMatch returns the name of the one box whose name starts with
// prefix (a session id cut short), false when none or several do.
func onlyPrefixMatch(boxes []box.BoxInfo, prefix string) (string, bool) {
	name, n := "", 0
	for _, b := range boxes {
		if prefix != "" && strings.HasPrefix(b.Task, prefix) {
			name, n = b.Task, n+1
		}
	}
	return name, n == 1
}

// runAttached runs fn in b, a box another hermes process runs (withBox),
// and closes b.
func (a *App) runAttached(b *box.Box, t config.TerminalConfig, runs bool, publish []string, fn func(b *box.Box) error) error {
	defer b.Close()
	if runs {
		if err := b.CheckWorkspace(box.ResolveWorkspace(t.Cwd)); err != nil {
			return err
		}
		b.WatchAttached(t.ProtectedPaths) // box exec/shell check after the command
	}
	if err := a.publishPorts(b, publish); err != nil {
		return err
	}
	return fn(b)
}

// publishPorts forwards each HOSTPORT:BOXPORT of publish to b.
func (a *App) publishPorts(b *box.Box, publish []string) error {
	for _, p := range publish {
		host, boxPort, err := parsePublish(p)
		if err != nil {
			return err
		}
		addr, err := b.Publish(host, boxPort)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.Stderr, "hermes: %s → box port %d\n", addr, boxPort)
	}
	return nil
}

func (a *App) newBoxExecCmd() *cobra.Command {
	var publish []string
	var timeout, stopTimeout time.Duration
	var create, interactive bool
	var image string
	cmd := &cobra.Command{
		Use: "exec TASK -- CMD [ARG...]", Short: "run a command in the box of TASK (attached when another hermes process runs it; started if needed; --new creates it)",
		Long: `Run CMD with its arguments in the box of TASK, directly (no shell: CMD is
looked up in the box's PATH; use sh -c '...' for shell syntax). Its standard
output and error go to hermes's; its exit status is hermes's (128+N when it
was killed by signal N, 127 when CMD is not found). -i passes hermes's
standard input to it. SIGINT, SIGTERM, SIGHUP (the terminal went) or SIGPIPE
(hermes's output went to a reader that left, as with | head) to hermes sends SIGTERM to the
command and waits --stop-timeout for it to exit (so a server such as hermes
gateway run drains), then kills its tree.

When another hermes process runs the box (an agent session, a box shell, a
box exec still running), the command runs in that box, with its limits,
workspace and environment (refused when this command's workspace, the
current directory or terminal.cwd, is another one); otherwise the box starts
for this command and stops after it, and after the commands other hermes
processes started in it meanwhile.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.boxTerminalConfig()
			if err != nil {
				return err
			}
			ctx, stop := boxCommandContext(cmd.Context())
			defer stop()
			return a.withBoxImage(ctx, args[0], image, create, true, publish, func(b *box.Box) error {
				return a.noteProtectedFailure(protect.New(t.ProtectedPaths), a.Stdout, a.Stderr, func(stdout, stderr io.Writer) error {
					c := box.Command{Argv: args[1:], Stdout: stdout, Stderr: stderr, Timeout: timeout, Dir: a.boxImageWorkdir(args[0])}
					if interactive {
						c.Stdin = a.Stdin
					}
					return a.runBoxCommand(ctx, b, c, stopTimeout)
				})
			})
		},
	}
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "pass standard input to the command")
	cmd.Flags().StringArrayVarP(&publish, "publish", "p", nil, "forward host port to box port, HOSTPORT:BOXPORT (repeatable)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "kill the command's tree after this long (0 = none)")
	cmd.Flags().DurationVar(&stopTimeout, "stop-timeout", 10*time.Second, "on SIGINT/SIGTERM, how long the command has to exit after its SIGTERM before it is killed")
	cmd.Flags().BoolVar(&create, "new", false, "create the box of TASK if it does not exist yet")
	cmd.Flags().StringVar(&image, "image", "", "with --new: the box's base image (an OCI reference such as registry/repo:tag, an OCI layout dir, an OCI archive or docker save tarball, or any terminal.box_image value)")
	return cmd
}

// boxExitError turns a command result into the process exit code.
func boxExitError(res backend.ExecResult) error {
	switch {
	case res.OOMKilled:
		return &ExitError{Code: 137, Err: errors.New("the command was killed by the box's OOM killer (raise terminal.container_memory)")}
	case res.TimedOut:
		return &ExitError{Code: 124, Err: errors.New("the command timed out")}
	case res.ExitCode < 0:
		code := 128 + 9
		if n := unix.SignalNum(res.Signal); n != 0 {
			code = 128 + int(n)
		}
		return &ExitError{Code: code, Err: fmt.Errorf("the command was killed by %s", res.Signal)}
	case res.ExitCode != 0:
		return &ExitError{Code: res.ExitCode, Silent: true}
	}
	return nil
}

func (a *App) newBoxShellCmd() *cobra.Command {
	var publish []string
	var create bool
	cmd := &cobra.Command{
		Use: "shell TASK", Short: "run an interactive shell in the box of TASK (on a terminal of the box when hermes runs on one)",
		Long: `Run the box's shell (bash, else sh) in the box of TASK, attached to the box when
another hermes process runs it. On a terminal, the shell gets a terminal of
its own in the box: the host terminal is put in raw mode, window size changes
follow, and Ctrl-C reaches the job running in the box. Otherwise the shell
reads commands from standard input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.boxTerminalConfig()
			if err != nil {
				return err
			}
			ctx, stop := boxCommandContext(cmd.Context())
			defer stop()
			return a.withBox(ctx, args[0], create, true, publish, func(b *box.Box) error {
				return a.boxShell(ctx, b, protect.New(t.ProtectedPaths))
			})
		},
	}
	cmd.Flags().StringArrayVarP(&publish, "publish", "p", nil, "forward host port to box port, HOSTPORT:BOXPORT (repeatable)")
	cmd.Flags().BoolVar(&create, "new", false, "create the box of TASK if it does not exist yet")
	return cmd
}

func (a *App) newBoxPortCmd() *cobra.Command {
	return &cobra.Command{
		Use: "port TASK HOSTPORT:BOXPORT...", Short: "forward host ports to ports inside the box of TASK until interrupted",
		Long: `Forward 127.0.0.1:HOSTPORT on the host to 127.0.0.1:BOXPORT inside the box of TASK
until interrupted (like BoxLite's ports=).

When another hermes process runs the box (an agent session, a box shell, a
box exec of a server), port attaches to it and forwards into it. Otherwise it
starts an idle box, in which nothing listens until something is started
there; processes do not outlive the process that runs the box, so start the
server and forward its port in one go:

  hermes box exec -p 8080:3000 TASK -- npm start

or keep the box running in the background with its ports:

  hermes box start -p 8080:3000 TASK -- npm start   (hermes box stop TASK ends it)`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withBox(cmd.Context(), args[0], false, false, args[1:], func(b *box.Box) error {
				<-cmd.Context().Done()
				return nil
			})
		},
	}
}

func (a *App) newBoxRmCmd() *cobra.Command {
	return &cobra.Command{
		Use: "rm TASK...", Short: "delete boxes and their persistent layers", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.boxTerminalConfig()
			if err != nil {
				return err
			}
			m, err := box.NewManager(box.Options{Terminal: t, Home: a.Home(), Executable: a.Executable})
			if err != nil {
				return err
			}
			defer m.Close()
			for _, task := range args {
				// box start's log (boxes-started/TASK.log) outlives box
				// stop for debugging; rm removes it, also of a box gone
				// at stop (not persistent).
				err := m.Remove(task)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err // a running box keeps its log
				}
				logGone := false
				if _, serr := os.Stat(startedPath(a.Home(), task)); errors.Is(serr, fs.ErrNotExist) { // not still started
					logGone = os.Remove(startedLogPath(a.Home(), task)) == nil
				}
				switch {
				case err == nil:
					fmt.Fprintln(a.Stdout, "removed", task)
				case logGone:
					fmt.Fprintln(a.Stdout, "removed the box start log of", task)
				default:
					return fmt.Errorf("no box %q (see hermes box ls)", task)
				}
			}
			return nil
		},
	}
}

func (a *App) newBoxStatsCmd() *cobra.Command {
	return &cobra.Command{
		Use: "stats [TASK]", Short: "show memory, pids, cpu and OOM counters of running boxes", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			boxes, err := box.ListBoxes(a.Home())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TASK\tMEMORY\tPEAK\tPIDS\tCPU\tTHROTTLED\tOOM KILLS\tWORKSPACE")
			found, bindSeen := false, false
			for _, b := range boxes {
				if len(args) == 1 && b.Task != args[0] {
					continue
				}
				st, err := box.CgroupStats(a.Home(), b.Task)
				if err != nil {
					if len(args) == 1 {
						return fmt.Errorf("box %s is not running", b.Task)
					}
					continue
				}
				found = true
				fmt.Fprintf(w, "%s\t%.1f MiB\t%.1f MiB\t%d\t%s\t%d\t%d\t%s\n", b.Task, float64(st.MemoryBytes)/(1<<20),
					float64(st.MemoryMaxBytes)/(1<<20), st.PIDs, st.CPUUsage.Round(time.Millisecond), st.ThrottledPeriod, st.OOMKills,
					workspaceColumn(a.Home(), b.Task, &bindSeen))
			}
			if bindSeen {
				defer fmt.Fprintln(a.Stdout, "bind: the box writes the host workspace directly; terminal.container_disk does not limit it (box_workspace: overlay keeps changes in the layer, within the limit)")
			}
			if len(args) == 1 && !found {
				return fmt.Errorf("no box %q (see hermes box ls)", args[0])
			}
			return w.Flush()
		},
	}
}

// workspaceColumn is the WORKSPACE column of hermes box stats: the host
// workspace's disk use and its mode; bindSeen is set for a bind mount
// (not limited by terminal.container_disk).
func workspaceColumn(home, task string, bindSeen *bool) string {
	ws, err := box.WorkspaceUsage(home, task)
	if err != nil {
		return "?"
	}
	if ws.Mode == "bind" {
		*bindSeen = true
	}
	more := ""
	if ws.Partial {
		more = "+"
	}
	return fmt.Sprintf("%.1f%s MiB (%s)", float64(ws.Bytes)/(1<<20), more, ws.Mode)
}

// boxManagerForLayers is a Manager used only to reach stopped boxes' layers.
func (a *App) boxManagerForLayers() (*box.Manager, error) {
	t, err := a.boxTerminalConfig()
	if err != nil {
		return nil, err
	}
	return box.NewManager(box.Options{Terminal: t, Home: a.Home(), Executable: a.Executable})
}

func (a *App) newBoxSnapshotCmd() *cobra.Command {
	return &cobra.Command{
		Use: "snapshot TASK", Short: "save the writable layer of the stopped box TASK as a snapshot", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.boxManagerForLayers()
			if err != nil {
				return err
			}
			defer m.Close()
			t, _ := a.boxTerminalConfig()
			store := snapshot.NewStore(a.Home())
			var man snapshot.Manifest
			err = m.WithUpper(args[0], false, func(upper string) error {
				man, err = store.Create(args[0], upper, snapshot.Origin{BaseImage: t.BoxImage})
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "%s\t%.1f MiB\n", man.ID, float64(man.Size)/(1<<20))
			return nil
		},
	}
}

// restoreSnapshot replaces the layer of task with snapshot id.
func (a *App) restoreSnapshot(id, task string) error {
	m, err := a.boxManagerForLayers()
	if err != nil {
		return err
	}
	defer m.Close()
	store := snapshot.NewStore(a.Home())
	if _, err := store.Get(id); err != nil {
		return err
	}
	restore := func(upper string) error {
		// The old layer stays until the restored one is complete on
		// disk; then the overlay's work dir is emptied.
		if _, err := store.ReplaceUpper(id, upper); err != nil {
			return err
		}
		return box.ResetWork(upper)
	}
	if _, err := os.Stat(m.StateDir(task)); errors.Is(err, fs.ErrNotExist) {
		// A new box: marked incomplete until restored, removed on failure.
		return m.WithNewUpper(task, id, restore)
	}
	return m.WithUpper(task, true, restore)
}

func (a *App) newBoxRestoreCmd() *cobra.Command {
	var (
		task  string
		force bool
	)
	cmd := &cobra.Command{
		Use: "restore SNAPSHOT", Short: "restore a snapshot into its task's box (or --task NEW); the box must be stopped", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			man, err := snapshot.NewStore(a.Home()).Get(args[0])
			if err != nil {
				return err
			}
			if task == "" {
				task = man.Task
			}
			if task != man.Task && !force {
				// --task is for a new box; replacing another one's layer
				// silently loses what it holds.
				boxes, err := box.ListBoxes(a.Home())
				if err != nil {
					return err
				}
				if slices.ContainsFunc(boxes, func(b box.BoxInfo) bool { return b.Task == task }) {
					return fmt.Errorf("box %q already exists; restoring snapshot %s into it replaces its files: pass --force to replace them, or name a new --task", task, args[0])
				}
			}
			if err := a.restoreSnapshot(args[0], task); err != nil {
				return err
			}
			fmt.Fprintln(a.Stdout, task)
			return nil
		},
	}
	cmd.Flags().StringVar(&task, "task", "", "restore into this task's box instead of the snapshot's own (a new one, or an existing one with --force)")
	cmd.Flags().BoolVar(&force, "force", false, "with --task naming an existing box, replace its files with the snapshot")
	return cmd
}

func (a *App) newBoxForkCmd() *cobra.Command {
	return &cobra.Command{
		Use: "fork SNAPSHOT", Short: "make a new box from a snapshot and print its task id", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			man, err := snapshot.NewStore(a.Home()).Get(args[0])
			if err != nil {
				return err
			}
			var suffix [3]byte
			rand.Read(suffix[:])
			task := man.Task + "-fork-" + hex.EncodeToString(suffix[:])
			if len(task) > 120 {
				task = "fork-" + hex.EncodeToString(suffix[:])
			}
			if err := a.restoreSnapshot(args[0], task); err != nil {
				return err
			}
			fmt.Fprintln(a.Stdout, task)
			return nil
		},
	}
}

func (a *App) newBoxSnapshotsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "snapshots", Short: "list snapshots: id, task, created, size (snapshots rm ID... deletes them)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			snaps, err := snapshot.NewStore(a.Home()).List()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tTASK\tCREATED\tSIZE")
			for _, s := range snaps {
				fmt.Fprintf(w, "%s\t%s\t%s\t%.1f MiB\n", box.QuoteName(s.ID), box.QuoteName(s.Task), s.Created.UTC().Format(time.RFC3339), float64(s.Size)/(1<<20))
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use: "rm SNAPSHOT...", Short: "delete snapshots (their archive and manifest); boxes restored from them keep their files",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			store := snapshot.NewStore(a.Home())
			for _, id := range ids {
				if err := store.Remove(id); err != nil {
					if errors.Is(err, snapshot.ErrNotFound) {
						return fmt.Errorf("%w (hermes box snapshots lists them)", err)
					}
					return err
				}
				fmt.Fprintf(a.Stdout, "removed %s\n", id)
			}
			return nil
		},
	})
	return cmd
}

// workspaceLayerError adds the fix to a diff/apply error.
func workspaceLayerError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (see hermes box ls)", err)
	}
	return err
}

func (a *App) newBoxDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff TASK",
		Short: "list the files the box of TASK added (A), changed (M) and deleted (D) in its copy-on-write workspace",
		Long: `With terminal.box_workspace: overlay a box writes its workspace into a layer of
its own and the host tree stays untouched. diff lists those changes against the
host workspace (the box is stopped first); hermes box apply TASK copies them over.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.boxManagerForLayers()
			if err != nil {
				return err
			}
			defer m.Close()
			_, changes, err := m.WorkspaceDiff(args[0])
			if err != nil {
				return workspaceLayerError(err)
			}
			fmt.Fprint(a.Stdout, box.FormatChanges(changes))
			return nil
		},
	}
}

func (a *App) newBoxApplyCmd() *cobra.Command {
	var allowExternal, allowProtected bool
	cmd := &cobra.Command{
		Use:   "apply TASK",
		Short: "copy the copy-on-write workspace changes of the box of TASK onto the host workspace",
		Long: `Stops the box of TASK and carries the changes hermes box diff lists over to the
host workspace: each file is replaced atomically (temp file, fsync, rename),
deleted paths are removed, and nothing is followed out of the workspace. The
box's workspace layer is emptied afterwards, so the box sees the host tree again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.boxManagerForLayers()
			if err != nil {
				return err
			}
			defer m.Close()
			ws, changes, note, err := m.ApplyWorkspace(args[0], allowExternal, allowProtected)
			if errors.Is(err, box.ErrProtectedPaths) {
				var protected []box.WorkspaceChange
				for _, c := range changes {
					if c.Protected != "" {
						protected = append(protected, c)
					}
				}
				fmt.Fprint(a.Stderr, box.FormatChanges(protected))
				return fmt.Errorf("%w (listed above); nothing was applied: git, your shell or your editor on the host would run what they hold; review them with hermes box diff %s, then re-run with --allow-protected to apply them", err, box.QuoteName(args[0]))
			}
			if errors.Is(err, box.ErrExternalSymlinks) {
				var external []box.WorkspaceChange
				for _, c := range changes {
					if c.External {
						external = append(external, c)
					}
				}
				fmt.Fprint(a.Stderr, box.FormatChanges(external))
				return fmt.Errorf("%w (listed above); nothing was applied: review them with hermes box diff %s, then re-run with --allow-external-symlinks to apply them", err, box.QuoteName(args[0]))
			}
			if err != nil {
				return workspaceLayerError(err)
			}
			fmt.Fprint(a.Stdout, box.FormatChanges(changes))
			fmt.Fprintf(a.Stderr, "hermes: applied %d changes to %s\n", len(changes), box.QuoteName(ws))
			if note != "" {
				fmt.Fprintln(a.Stderr, note)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&allowExternal, "allow-external-symlinks", false, "also apply symlinks that point outside the workspace")
	cmd.Flags().BoolVar(&allowProtected, "allow-protected", false, "also apply changes to terminal.protected_paths (.git/config, .git/hooks/, shell rc files...)")
	return cmd
}
