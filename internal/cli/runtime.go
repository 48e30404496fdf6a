package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/session"
)

// chatRuntime is the CLI's client of the session runtime: one runtime, one
// open session at a time, and a renderer for its events.
type chatRuntime struct {
	app     *App
	cfg     *config.Loaded
	opts    *chatOptions
	rt      *session.Runtime
	session *session.Session
	render  *renderer
	redact  redactor
}

// Close closes the session runtime (sessions, store, provider, backend).
func (rt *chatRuntime) Close() error { return rt.rt.Close() }

// newRuntime loads config, applies flags and starts the session runtime.
// It does not pick the session.
func (a *App) newRuntime(ctx context.Context, o *chatOptions, r *renderer) (*chatRuntime, error) {
	if o.safeMode {
		o.ignoreUserConfig, o.ignoreRules = true, true
	}
	cfg, err := config.Load(a.Home(), config.LoadOptions{IgnoreUserConfig: o.ignoreUserConfig, Getenv: a.Getenv})
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(a.Stderr, "hermes: warning:", w)
	}
	for key, val := range map[string]string{"model.default": o.model, "model.provider": o.provider, "model.base_url": o.baseURL} {
		if val != "" {
			if err := cfg.Override(key, val); err != nil {
				return nil, err
			}
		}
	}
	if o.maxTurns > 0 {
		if err := cfg.Override("agent.max_turns", strconv.Itoa(o.maxTurns)); err != nil {
			return nil, err
		}
	}
	srt, err := session.New(ctx, a.sessionOptions(cfg, o))
	if err != nil {
		return nil, err
	}
	return &chatRuntime{app: a, cfg: cfg, opts: o, rt: srt, render: r, redact: redactor{srt.Redactor()}}, nil
}

// sessionOptions are the session runtime options of this process for cfg
// and the chat flags o.
func (a *App) sessionOptions(cfg *config.Loaded, o *chatOptions) session.Options {
	return session.Options{
		Config: cfg, Home: a.Home(), UserHome: a.Getenv("HOME"), Environ: a.Environ, Now: a.Now,
		RecordPath: o.record, ReplayPath: o.replay, Yolo: o.yolo, IgnoreRules: o.ignoreRules,
		Toolsets: o.toolsets, Platform: "cli", NewBackend: a.newBackend,
		Warn: func(msg string) { fmt.Fprintln(a.Stderr, "hermes:", msg) },
	}
}

// newBackend builds the terminal.backend named in config.
func (a *App) newBackend(c *config.Config, cwd string) (backend.Backend, error) {
	switch c.Terminal.Backend {
	case "", "local":
		return local.New(cwd, c.Terminal.EnvPassthrough, a.Environ)
	case "box":
		return a.newBoxBackend(c, cwd)
	default:
		return nil, fmt.Errorf("terminal.backend %q is not supported: use local or box (`hermes config set terminal.backend box`)", c.Terminal.Backend)
	}
}

// openSession resumes the session named by -c/--resume or creates a new
// one with a freshly built system prompt.
func (rt *chatRuntime) openSession(ctx context.Context, source string) error {
	s, err := rt.rt.Open(ctx, session.OpenOptions{Resume: rt.opts.resume, Continue: rt.opts.continueLast, Source: source})
	if err != nil {
		return err
	}
	rt.session = s
	return nil
}

// newSession replaces the open session with a new one (/new).
func (rt *chatRuntime) newSession(ctx context.Context, source string) error {
	s, err := rt.rt.Open(ctx, session.OpenOptions{Source: source})
	if err != nil {
		return err
	}
	if rt.session != nil {
		rt.session.Close()
	}
	rt.session = s
	return nil
}

// approver answers an approval request of the running turn; nil for runs
// where nobody can answer (the request is then denied as headless).
type approver func(ev session.Event) approval.Answer

// runTurn sends text to the open session and renders its events until
// the turn ends, answering approval requests with ask.
func (rt *chatRuntime) runTurn(ctx context.Context, text string, ask approver) (agent.TurnResult, error) {
	sub := rt.session.Subscribe(session.SubscribeOptions{MaxPendingDeltaBytes: -1, Approver: ask != nil})
	defer sub.Close()
	turn, _, err := rt.session.Send(ctx, text, session.SendOptions{})
	if err != nil {
		return agent.TurnResult{}, err
	}
	for {
		// Every turn ends with a Final or Error event, also when cancelled.
		ev, err := sub.Next(context.WithoutCancel(ctx))
		if err != nil {
			return agent.TurnResult{}, err
		}
		if ev.TurnID != turn.ID {
			continue
		}
		switch ev.Kind {
		case session.ApprovalRequest:
			rt.render.mu.Lock()
			rt.render.endLine()
			rt.render.mu.Unlock()
			rt.session.Approve(ev.Approval.ID, ask(ev))
		case session.Final, session.Error:
			return turn.Wait(context.WithoutCancel(ctx))
		default:
			rt.render.event(ev)
		}
	}
}

// withPreloadedSkills prepends the skills named by -s/--skills to the
// first user message of the run (cache-safe: the system prompt is unchanged).
func (rt *chatRuntime) withPreloadedSkills(text string) (string, error) {
	return rt.rt.PreloadSkills(rt.opts.skills, text)
}

// review runs the self-improvement review after a busy turn.
func (rt *chatRuntime) review(ctx context.Context, res agent.TurnResult) {
	changes, err := rt.session.Review(ctx, res)
	if err != nil {
		fmt.Fprintf(rt.app.Stderr, "hermes: background review failed: %v\n", err)
	}
	for _, c := range changes {
		fmt.Fprintln(rt.app.Stderr, c)
	}
}
