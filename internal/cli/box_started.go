package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/ociimage"
	"github.com/hermes-go/hermes/internal/procident"
)

// runStartedBox is the detached owner of a box hermes box start started:
// it starts the box, publishes its ports, runs CMD if given, reports
// readiness on --owner-fd, and keeps the box until SIGTERM/SIGINT (hermes
// box stop), --lifetime, the end of CMD, or --idle with nothing running.
// It then gives the box's processes --stop-timeout after SIGTERM and
// stops the box.
func (a *App) runStartedBox(ctx context.Context, task string, argv []string, o boxStartOptions) error {
	readyW := os.NewFile(uintptr(o.ownerFD), "owner-fd")
	if readyW == nil {
		return fmt.Errorf("--owner-fd %d is not open", o.ownerFD)
	}
	report := func(r startedReady) {
		if readyW != nil {
			b, _ := json.Marshal(r)
			readyW.Write(append(b, '\n'))
			readyW.Close()
			readyW = nil
		}
	}
	b, m, rec, err := a.bootStartedBox(ctx, task, argv, o)
	if err != nil {
		report(startedReady{Err: err.Error()})
		return err
	}
	defer m.Close()
	defer os.Remove(startedPath(a.Home(), task))
	stopRequest := stopRequestPath(a.Home(), task)
	os.Remove(stopRequest) // left by a stop of an earlier owner
	defer os.Remove(stopRequest)
	argv, dir := imageStartCommand(a.boxImageState(task), argv, o.workdir)
	rec.Command = argv
	exited := make(chan string, 1)
	if len(argv) > 0 {
		p, err := b.Command(context.Background(), box.Command{Argv: argv, Dir: dir, Stdout: a.Stdout, Stderr: a.Stderr})
		if err != nil {
			if rec.created { // a failed start leaves nothing in hermes box ls
				m.Remove(task)
			}
			report(startedReady{Err: fmt.Sprintf("box %s: start %q: %v", box.QuoteName(task), argv[0], err)})
			return err
		}
		go func() {
			res, err := p.Wait(context.Background())
			if err != nil {
				exited <- fmt.Sprintf("the command failed: %v", err)
				return
			}
			exited <- fmt.Sprintf("the command exited (status %d)", res.ExitCode)
		}()
	}
	if err := atomicfile.Write(startedPath(a.Home(), task), mustJSON(rec), 0o600); err != nil {
		report(startedReady{Err: err.Error()})
		return err
	}
	report(startedReady{Ports: rec.Ports})
	fmt.Fprintf(a.Stderr, "hermes: box %s started at %s\n", task, a.Now().Format(time.RFC3339))
	why := a.waitStartedBox(ctx, b, o, exited)
	fmt.Fprintf(a.Stderr, "hermes: box %s stopping: %s\n", task, why)
	select {
	case <-b.Died():
		return nil // nothing of the box runs; its pid may be another's now
	default:
	}
	if _, err := os.Stat(stopRequest); err == nil {
		return nil // hermes box stop gave the processes their SIGTERM and its --timeout
	}
	if left, err := box.TerminateProcesses(b.InitPID(), o.stopTimeout); err != nil {
		fmt.Fprintf(a.Stderr, "hermes: box %s: %v\n", task, err)
	} else if left > 0 {
		fmt.Fprintf(a.Stderr, "hermes: box %s: %d processes still ran %s after SIGTERM: killed\n", task, left, o.stopTimeout)
	}
	return nil
}

// bootStartedBox starts the box of task for runStartedBox and returns
// it, its Manager and the record to publish.
func (a *App) bootStartedBox(ctx context.Context, task string, argv []string, o boxStartOptions) (*box.Box, *box.Manager, startedBox, error) {
	env, err := parseEnvFlags(o.env)
	if err != nil {
		return nil, nil, startedBox{}, err
	}
	t, err := a.boxTerminalConfig()
	if err != nil {
		return nil, nil, startedBox{}, err
	}
	if !o.idleSet {
		o.idle = time.Duration(t.LifetimeSeconds) * time.Second
	}
	t.LifetimeSeconds = 0 // this process stops the box itself (waitStartedBox)
	if o.image != "" {
		t.BoxImage = o.image // checked by startBoxDetached (checkBoxImageFlag)
	}
	m, err := a.newBoxManager(t, "", false, func(opts *box.Options) { opts.Env = env })
	if err != nil {
		return nil, nil, startedBox{}, err
	}
	_, statErr := os.Stat(m.StateDir(task))
	existed := statErr == nil
	b, err := m.Box(ctx, task)
	if err != nil && !existed {
		m.Remove(task) // a failed start leaves nothing in hermes box ls
	}
	if err == nil && b.Attached() {
		err = fmt.Errorf("box %s already runs in another hermes process (an agent session, box exec or box shell); run commands in it with hermes box exec %s, or start it when that process has ended",
			box.QuoteName(task), box.QuoteName(task))
	}
	if err != nil {
		m.Close()
		return nil, nil, startedBox{}, err
	}
	start, _, _ := procident.StartTime(os.Getpid())
	initStart, _, _ := procident.StartTime(b.InitPID())
	rec := startedBox{Task: task, PID: os.Getpid(), StartTime: start, InitPID: b.InitPID(), InitStartTime: initStart, Command: argv,
		StartedAt: a.Now(), Log: startedLogPath(a.Home(), task), created: !existed}
	if o.lifetime > 0 {
		rec.StopAt = rec.StartedAt.Add(o.lifetime)
	}
	for _, p := range o.publish {
		host, boxPort, err := parsePublish(p)
		if err == nil {
			var addr fmt.Stringer
			if addr, err = b.Publish(host, boxPort); err == nil {
				rec.Ports = append(rec.Ports, fmt.Sprintf("%s->%d", addr, boxPort))
			}
		}
		if err != nil {
			if holder := a.portHolder(task, host); holder != "" {
				err = fmt.Errorf("%w; %s", err, holder)
			}
			// A box this start created goes again: a failed start leaves
			// nothing in hermes box ls.
			if !existed {
				m.Remove(task)
			}
			m.Close()
			return nil, nil, startedBox{}, err
		}
	}
	return b, m, rec, nil
}

// portHolder names the other box hermes box start runs that publishes
// hostAddr's port ("port 8080 is published by box web (hermes box start,
// pid N): stop it with hermes box stop web"), or "".
func (a *App) portHolder(task, hostAddr string) string {
	_, port, err := net.SplitHostPort(hostAddr)
	if err != nil || port == "0" {
		return ""
	}
	entries, _ := os.ReadDir(startedDir(a.Home()))
	for _, e := range entries {
		other, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || other == task {
			continue
		}
		s, alive := readStartedBox(a.Home(), other)
		if !alive {
			continue
		}
		for _, p := range s.Ports { // "127.0.0.1:8080->8080"
			addr, _, _ := strings.Cut(p, "->")
			if _, hp, err := net.SplitHostPort(addr); err == nil && hp == port {
				return fmt.Sprintf("port %s is published by box %s (hermes box start, pid %d): stop it with hermes box stop %s, or pick another port",
					port, box.QuoteName(other), s.PID, box.QuoteName(other))
			}
		}
	}
	return ""
}

// imageStartCommand returns the command box start runs in a box made
// from the OCI image u (nil for a box on another base: argv and workdir
// as given) and its working directory. As docker run does
// (https://docs.docker.com/reference/dockerfile/#understand-how-cmd-and-entrypoint-interact):
// Entrypoint followed by argv, or by the image's Cmd when argv is empty;
// the directory is workdir, else the image's WorkingDir ("" = the
// workspace). An empty result means the box waits for commands.
func imageStartCommand(u *ociimage.BoxImage, argv []string, workdir string) ([]string, string) {
	if u == nil {
		return argv, workdir
	}
	if workdir == "" {
		workdir = u.Config.WorkingDir
	}
	if len(argv) == 0 {
		return u.Config.Command(), workdir
	}
	return append(append([]string(nil), u.Config.Entrypoint...), argv...), workdir
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs only
	}
	return append(b, '\n')
}

// waitStartedBox waits for the reason to stop the box and returns it.
func (a *App) waitStartedBox(ctx context.Context, b *box.Box, o boxStartOptions, exited <-chan string) string {
	var lifetime <-chan time.Time
	if o.lifetime > 0 {
		t := time.NewTimer(o.lifetime)
		defer t.Stop()
		lifetime = t.C
	}
	var idleTick <-chan time.Time
	if o.idle > 0 {
		tk := time.NewTicker(min(max(o.idle/4, 50*time.Millisecond), 10*time.Second))
		defer tk.Stop()
		idleTick = tk.C
	}
	busyAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
				return strings.TrimPrefix(c.Error(), "received ")
			}
			return "stopped"
		case <-lifetime:
			return fmt.Sprintf("its lifetime of %s is over", o.lifetime)
		case why := <-exited:
			return why
		case <-b.Died(): // the init was killed (the OOM killer too): stop at once
			return b.DeathReason()
		case now := <-idleTick:
			procs, err := box.Processes(b.InitPID())
			if err != nil {
				return "its init ended"
			}
			if len(procs) > 0 {
				busyAt = now
			} else if now.Sub(busyAt) >= o.idle {
				return fmt.Sprintf("nothing ran in it for %s", o.idle)
			}
		}
	}
}
