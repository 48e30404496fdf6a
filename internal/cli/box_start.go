package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/procident"
)

// startedBox is HERMES_HOME/boxes-started/TASK.json: the detached hermes
// process that runs the box of TASK for `hermes box start`, written once
// the box is up and removed when it stops. PID and StartTime (field 22 of
// /proc/PID/stat) tell that process from one that reused its pid.
type startedBox struct {
	Task      string `json:"task"`
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	InitPID   int    `json:"init_pid"`
	// InitStartTime is the init's start time: with its parent (the owner)
	// it tells the init from a process that reused its pid after the init
	// died (killed, or by the OOM killer). Records without one are not
	// trusted with the init's pid.
	InitStartTime uint64    `json:"init_start_time,omitempty"`
	Ports         []string  `json:"ports,omitempty"` // "127.0.0.1:8080->8080"
	Command       []string  `json:"command,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	StopAt        time.Time `json:"stop_at,omitzero"` // --lifetime's end; zero = none
	Log           string    `json:"log"`
	// created: this start made the box (not recorded; runStartedBox
	// removes such a box when its command cannot start).
	created bool
}

func startedDir(home string) string { return filepath.Join(home, "boxes-started") }
func startedPath(home, task string) string {
	return filepath.Join(startedDir(home), task+".json")
}
func startedLogPath(home, task string) string { return filepath.Join(startedDir(home), task+".log") }

// stopRequestPath is the file hermes box stop writes once it has given the
// box's processes their SIGTERM and --timeout, just before it signals the
// box's owner: the owner then stops the box without a grace of its own (a
// second SIGTERM, --stop-timeout more).
func stopRequestPath(home, task string) string {
	return filepath.Join(startedDir(home), task+".stop")
}

// alive reports whether the owner process s names still runs.
func (s startedBox) alive() bool { return s.owner().Alive() }

// owner is the hermes process that owns the started box.
func (s startedBox) owner() procident.Process {
	return procident.Process{PID: s.PID, StartTime: s.StartTime}
}

// initRuns reports whether the box's init named by s still runs: same pid
// and start time, and a child of the owner. Only then may its pid be used
// to find (and signal) the box's processes.
func (s startedBox) initRuns() bool {
	init := procident.Process{PID: s.InitPID, StartTime: s.InitStartTime}
	if s.InitStartTime == 0 || !init.Alive() {
		return false
	}
	ppid, err := procident.Parent(s.InitPID)
	return err == nil && ppid == s.PID && init.Alive()
}

// readStartedBox returns the record of a box hermes box start runs, and
// whether its owner still runs (a record left by a killed owner is not).
func readStartedBox(home, task string) (startedBox, bool) {
	var s startedBox
	b, err := os.ReadFile(startedPath(home, task))
	if err != nil || json.Unmarshal(b, &s) != nil {
		return startedBox{}, false
	}
	return s, s.alive()
}

// boxStartOptions are the flags of hermes box start.
type boxStartOptions struct {
	publish     []string
	env         []string
	workdir     string
	image       string // --image: the base of a new box (terminal.box_image)
	lifetime    time.Duration
	idle        time.Duration
	idleSet     bool
	stopTimeout time.Duration
	ownerFD     int // hidden: this process is the detached owner; readiness goes to this fd
}

func (a *App) newBoxStartCmd() *cobra.Command {
	var o boxStartOptions
	cmd := &cobra.Command{
		Use:   "start [--image REF] [TASK] [-- CMD [ARG...]]",
		Short: "start the box of TASK in the background (detached), with published ports; hermes box stop ends it",
		Long: `Start the box of TASK (created if needed; a generated name when TASK is
left out) and return at once, printing the task name. The box keeps running
in a detached hermes process until hermes box stop TASK, until --lifetime
has passed, or until it has run nothing but its init for --idle (default
terminal.lifetime_seconds; 0 = never). As BoxLite's SimpleBox(ports=...)
does, -p forwards 127.0.0.1:HOSTPORT on the host to BOXPORT in the box for
as long as the box runs.

With CMD, the box runs it (directly, no shell; output in the log that start
prints) and stops when it exits; without one the box waits for commands:
hermes box exec TASK -- sh -c 'nohup server > /tmp/log 2>&1 &' returns as
soon as the server is launched, and the server keeps running in the box.
The ports servers in the box listen on are listed by cat /proc/net/tcp there
(hermes box exec TASK -- ps aux lists its processes, where the image has ps).

-e sets variables for every command in the box (box exec included); -w is
CMD's working directory.

--image REF makes a new box from an OCI image (registry/repo:tag,
@sha256:..., an OCI layout dir, an OCI archive or a docker save tarball; pulled here,
with a progress bar on a terminal, before box start detaches), as box exec
--new --image does. As docker run does, the box then runs
the image's Entrypoint followed by its Cmd when no CMD is given, and
Entrypoint followed by CMD when one is (CMD replaces Cmd); the image's Env
applies to every command and its WorkingDir is CMD's default directory. An
image with neither Entrypoint nor Cmd waits for commands.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			task, argv, err := splitStartArgs(cmd, args)
			if err != nil {
				return err
			}
			o.idleSet = cmd.Flags().Changed("idle")
			if o.ownerFD > 0 {
				return a.runStartedBox(cmd.Context(), task, argv, o)
			}
			return a.startBoxDetached(cmd.Context(), task, argv, o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.publish, "port", "p", nil, "forward host port to box port, HOSTPORT:BOXPORT (repeatable)")
	f.StringArrayVar(&o.publish, "publish", nil, "same as --port")
	f.StringArrayVarP(&o.env, "env", "e", nil, "KEY=VALUE for every command in the box (repeatable)")
	f.StringVarP(&o.workdir, "workdir", "w", "", "working directory of CMD in the box (default: the image's WorkingDir, else the workspace)")
	f.StringVar(&o.image, "image", "", "a new box's base image (an OCI reference such as registry/repo:tag, an OCI layout dir, an OCI archive or docker save tarball, or any terminal.box_image value); its Entrypoint and Cmd run when no CMD is given")
	f.DurationVar(&o.lifetime, "lifetime", 0, "stop the box this long after it started (0 = no limit)")
	f.DurationVar(&o.idle, "idle", 0, "stop the box once it has run nothing but its init for this long (default terminal.lifetime_seconds; 0 = never)")
	f.DurationVar(&o.stopTimeout, "stop-timeout", 10*time.Second, "when the box stops by itself, how long its processes have after SIGTERM before they are killed")
	f.IntVar(&o.ownerFD, "owner-fd", 0, "")
	f.MarkHidden("owner-fd")
	return cmd
}

// splitStartArgs splits box start's arguments into TASK (generated when
// left out) and the command after --.
func splitStartArgs(cmd *cobra.Command, args []string) (string, []string, error) {
	before, after := args, []string(nil)
	if d := cmd.ArgsLenAtDash(); d >= 0 {
		before, after = args[:d], args[d:]
	}
	switch len(before) {
	case 0:
		var b [4]byte
		rand.Read(b[:])
		return "box-" + hex.EncodeToString(b[:]), after, nil
	case 1:
		return before[0], after, nil
	}
	return "", nil, fmt.Errorf("box start takes one TASK, got %q; put the command after --: hermes box start TASK -- CMD [ARG...]", before)
}

// parseEnvFlags parses -e KEY=VALUE flags.
func parseEnvFlags(kvs []string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, "\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("-e %q: want KEY=VALUE", kv)
		}
		env[k] = v
	}
	return env, nil
}

// startedReady is the line the detached owner writes to --owner-fd: the
// box is up (Err empty) or could not start.
type startedReady struct {
	Ports []string `json:"ports,omitempty"`
	Err   string   `json:"error,omitempty"`
}

// boxStartWait bounds how long box start waits for the detached process
// to report the box up (a first start builds its layer disk).
const boxStartWait = 2 * time.Minute

// startBoxDetached runs this same command again as a detached process
// (own session, stdin /dev/null, output to the box's log) with --owner-fd
// set, and waits for its readiness line.
func (a *App) startBoxDetached(ctx context.Context, task string, argv []string, o boxStartOptions) error {
	home := a.Home()
	for _, p := range o.publish {
		if _, _, err := parsePublish(p); err != nil {
			return err
		}
	}
	if _, err := parseEnvFlags(o.env); err != nil {
		return err
	}
	if s, ok := readStartedBox(home, task); ok {
		return fmt.Errorf("box %s already runs (hermes box start, pid %d); stop it first: hermes box stop %s", box.QuoteName(task), s.PID, box.QuoteName(task))
	}
	if o.image != "" {
		if err := a.checkBoxImageFlag(task, o.image, true); err != nil {
			return err
		}
	}
	if err := a.pullBoxImageFirst(ctx, task, o.image); err != nil {
		return err
	}
	if err := os.MkdirAll(startedDir(home), 0o700); err != nil {
		return err
	}
	logPath := startedLogPath(home, task)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", logPath, err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	exe := a.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			w.Close()
			return err
		}
	}
	child := exec.Command(exe, ownerArgs(task, argv, o)...)
	child.Env = append(a.Environ(), "HERMES_HOME="+home)
	child.Stdout, child.Stderr = logf, logf
	child.ExtraFiles = []*os.File{w} // fd 3
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = child.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start %s box start: %w", exe, err)
	}
	go child.Wait() // reaped when it ends; it outlives this process otherwise
	ready, err := readReady(ctx, r)
	if err != nil {
		child.Process.Kill()
		return fmt.Errorf("box %s did not start: %w\n%s", box.QuoteName(task), err, logTail(logPath, 0, 20))
	}
	if ready.Err != "" {
		return errors.New(ready.Err)
	}
	for _, p := range ready.Ports {
		fmt.Fprintf(a.Stderr, "hermes: %s\n", strings.Replace(p, "->", " → box port ", 1))
	}
	fmt.Fprintf(a.Stderr, "hermes: box %s runs in the background (pid %d, log %s); stop it with hermes box stop %s\n",
		box.QuoteName(task), child.Process.Pid, logPath, box.QuoteName(task))
	fmt.Fprintln(a.Stdout, task)
	return nil
}

// ownerArgs are the detached owner's arguments: box start's own, with
// --owner-fd 3.
func ownerArgs(task string, argv []string, o boxStartOptions) []string {
	args := []string{"box", "start", "--owner-fd", "3", "--stop-timeout", o.stopTimeout.String(), "--lifetime", o.lifetime.String()}
	if o.idleSet {
		args = append(args, "--idle", o.idle.String())
	}
	for _, p := range o.publish {
		args = append(args, "-p", p)
	}
	for _, e := range o.env {
		args = append(args, "-e", e)
	}
	if o.workdir != "" {
		args = append(args, "-w", o.workdir)
	}
	if o.image != "" {
		args = append(args, "--image", o.image)
	}
	args = append(args, task)
	if len(argv) > 0 {
		args = append(append(args, "--"), argv...)
	}
	return args
}

// readReady reads the owner's readiness line; EOF without one means the
// owner ended before the box was up.
func readReady(ctx context.Context, r *os.File) (startedReady, error) {
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(io.LimitReader(r, 64<<10)).ReadBytes('\n')
		got <- result{line, err}
	}()
	timer := time.NewTimer(boxStartWait)
	defer timer.Stop()
	select {
	case res := <-got:
		var ready startedReady
		if res.err != nil && len(res.line) == 0 {
			return ready, errors.New("the background hermes process ended before the box was up (its log follows)")
		}
		if err := json.Unmarshal(res.line, &ready); err != nil {
			return ready, fmt.Errorf("the background hermes process answered %q", res.line)
		}
		return ready, nil
	case <-timer.C:
		return startedReady{}, fmt.Errorf("not up within %s", boxStartWait)
	case <-ctx.Done():
		return startedReady{}, ctx.Err()
	}
}

// startedBoxColumns are the STATE and PORTS columns of hermes box ls for
// task: a box hermes box start runs shows its owner, the end of its
// lifetime and its published ports; others keep state and show "-".
func (a *App) startedBoxColumns(task, state string) (string, string) {
	s, ok := readStartedBox(a.Home(), task)
	if !ok || state != "running" {
		return state, "-"
	}
	state = fmt.Sprintf("running (box start, pid %d", s.PID)
	if !s.StopAt.IsZero() {
		state += ", stops " + s.StopAt.Local().Format(time.DateTime)
	}
	state += ")"
	if len(s.Ports) == 0 {
		return state, "-"
	}
	return state, strings.Join(s.Ports, ",")
}

// boxStopKillWait bounds how long box stop waits for the detached owner
// to exit after its SIGTERM (it then stops the box: a kernel teardown)
// before it kills it.
const boxStopKillWait = 30 * time.Second

func (a *App) newBoxStopCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "stop TASK...",
		Short: "stop boxes hermes box start runs: SIGTERM to their processes, SIGKILL after --timeout",
		Long: `Stop the box of each TASK that hermes box start runs: every process in the box
gets SIGTERM and --timeout to exit (a server drains), then the box stops and
what is left is killed. The box's persistent layer is kept (hermes box rm
deletes it).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, task := range args {
				if err := a.stopStartedBox(task, timeout); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().DurationVarP(&timeout, "timeout", "t", 10*time.Second, "how long the box's processes have after SIGTERM before they are killed")
	return cmd
}

// stopStartedBox stops the box hermes box start runs for task.
func (a *App) stopStartedBox(task string, timeout time.Duration) error {
	home := a.Home()
	s, ok := readStartedBox(home, task)
	if !ok {
		if s.PID != 0 { // its owner was killed: the box went with it
			os.Remove(startedPath(home, task))
		}
		return fmt.Errorf("box %s is not running from hermes box start (hermes box ls lists boxes; one an agent session or box exec runs stops with that process)", box.QuoteName(task))
	}
	owner := s.owner()
	if !s.initRuns() {
		// The init died (killed, or by the OOM killer) and its pid may
		// name another process now: signal nothing but the owner.
		fmt.Fprintf(a.Stderr, "hermes: box %s: its init (pid %d) no longer runs; stopping the hermes process that ran it\n", box.QuoteName(task), s.InitPID)
	} else {
		left, err := box.TerminateProcesses(s.InitPID, timeout)
		if err != nil && owner.Alive() {
			fmt.Fprintf(a.Stderr, "hermes: box %s: %v\n", box.QuoteName(task), err)
		}
		if left > 0 {
			fmt.Fprintf(a.Stderr, "hermes: box %s: %d processes still ran %s after SIGTERM: killing them\n", box.QuoteName(task), left, timeout)
		}
		os.WriteFile(stopRequestPath(home, task), nil, 0o600)
	}
	if err := syscall.Kill(s.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal the process running box %s (pid %d): %w", task, s.PID, err)
	}
	if !owner.WaitExit(boxStopKillWait) {
		syscall.Kill(s.PID, syscall.SIGKILL) // the box's init dies with its owner
		if !owner.WaitExit(10 * time.Second) {
			return fmt.Errorf("the process running box %s (pid %d) survived SIGKILL", task, s.PID)
		}
		os.Remove(startedPath(home, task))
	}
	fmt.Fprintln(a.Stdout, "stopped", task)
	return nil
}
