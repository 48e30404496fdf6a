package cli

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/tui"
)

// useTUI reports whether an interactive chat uses the TUI: on a terminal
// unless --cli forces the line REPL.
func (a *App) useTUI(o *chatOptions) bool {
	return a.IsTerminal && !o.cli
}

// runTUI runs the interactive chat in the TUI (internal/tui) on the open
// session of rt; initial, when not empty, is the first message.
func (a *App) runTUI(ctx context.Context, rt *chatRuntime, initial string) error {
	cwd, _ := os.Getwd()
	o := tui.Options{
		Runtime: rt.rt, Session: rt.session, Home: a.Home(), Cwd: cwd, Version: Version, Initial: initial,
		Yolo: rt.opts.yolo, Verbose: rt.opts.verbose, Now: a.Now,
		Preload: rt.withPreloadedSkills,
		Review: func(ctx context.Context, s *session.Session, res agent.TurnResult) []string {
			changes, err := s.Review(ctx, res)
			if err != nil {
				return []string{"hermes: background review failed: " + err.Error()}
			}
			return changes
		},
		Models: func(ctx context.Context) ([]string, error) { return rt.rt.ListModels(ctx) },
		SwitchModel: func(ctx context.Context, model string) (*session.Runtime, *session.Session, error) {
			return a.switchModel(ctx, rt, model)
		},
	}
	if rt.rt.Config().Terminal.Backend == "box" {
		o.BoxState = boxState(rt)
	}
	// What the process writes to stderr while the TUI draws (warnings,
	// "waiting for another turn") is printed by the TUI above its live
	// region instead of over it.
	notices := &lineWriter{lines: make(chan string, 256)}
	stderr := a.Stderr
	a.Stderr, o.Notices = notices, notices.lines
	defer func() { a.Stderr = stderr }()
	return tui.Run(ctx, o, a.Stdin, a.Stdout)
}

// lineWriter sends each complete line written to it on lines; when
// nobody reads, lines past the channel's buffer are dropped.
type lineWriter struct {
	mu    sync.Mutex
	part  []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := strings.TrimRight(string(w.part[:i]), "\r")
		w.part = w.part[i+1:]
		select {
		case w.lines <- line:
		default:
		}
	}
}

// switchModel restarts rt's session runtime on model and reopens the open
// session in it (/model); on failure rt is left as it was.
func (a *App) switchModel(ctx context.Context, rt *chatRuntime, model string) (*session.Runtime, *session.Session, error) {
	o := *rt.opts
	o.model = model
	// The new runtime is the one the process ends with; the old one's
	// store then keeps its idle connection until the exit (ExitAfterClose).
	next, err := a.newRuntime(ctx, &o, rt.render, true)
	if err != nil {
		return nil, nil, err
	}
	s, err := next.rt.Open(ctx, session.OpenOptions{Resume: rt.session.ID()})
	if err != nil {
		next.Close()
		return nil, nil, err
	}
	old := rt.rt
	rt.rt, rt.session, rt.opts, rt.redact = next.rt, s, &o, next.redact
	old.Close()
	return rt.rt, rt.session, nil
}

// boxState reports the open session's box (terminal.backend: box): ready
// when it runs, stopped otherwise; nil for other backends.
func boxState(rt *chatRuntime) func() string {
	return func() string {
		b := rt.rt.Backend()
		if nb, ok := b.(*noticeBackend); ok {
			b = nb.Backend
		}
		m, ok := b.(*box.Manager)
		if !ok {
			return "stopped"
		}
		if slices.Contains(m.Running(), rt.session.ID()) {
			return "ready"
		}
		if rt.session.Busy() {
			return "starting"
		}
		return "stopped"
	}
}
