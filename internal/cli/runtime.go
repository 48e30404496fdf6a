package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/registry"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/session"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"
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
// It does not pick the session. last says the process ends when this
// runtime closes (session.Options.ExitAfterClose).
func (a *App) newRuntime(ctx context.Context, o *chatOptions, r *renderer, last bool) (*chatRuntime, error) {
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
	if err := config.CheckString("model.api_mode", cfg.Config.Model.APIMode); err != nil {
		// Reported on every run, not only by `config check`: the value is
		// ignored and the wire follows model.provider.
		fmt.Fprintf(a.Stderr, "hermes: warning: %v (from %s); it is ignored and the API follows model.provider; fix it with `hermes config set model.api_mode chat_completions` or `hermes config unset model.api_mode`\n",
			err, cfg.Source("model.api_mode"))
	}
	for key, val := range map[string]string{"model.default": o.model, "model.provider": o.provider, "model.base_url": o.baseURL, reasoningKey: o.reasoning} {
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
	so := a.sessionOptions(cfg, o)
	so.ExitAfterClose = last
	srt, err := session.New(ctx, so)
	if err != nil {
		return nil, err
	}
	a.reasoningNotice(srt.ProviderName(), cfg.Config.Agent.ReasoningEffort)
	return &chatRuntime{app: a, cfg: cfg, opts: o, rt: srt, render: r, redact: redactor{srt.Redactor()}}, nil
}

// sessionOptions are the session runtime options of this process for cfg
// and the chat flags o.
func (a *App) sessionOptions(cfg *config.Loaded, o *chatOptions) session.Options {
	return session.Options{
		Config: cfg, Home: a.Home(), UserHome: a.Getenv("HOME"), Environ: a.Environ, Now: a.Now,
		RecordPath: o.record, ReplayPath: o.replay, Yolo: o.yolo, IgnoreRules: o.ignoreRules,
		Toolsets: o.toolsets, Platform: "cli",
		// The main model titles conversations (REPL/TUI, chats, ACP); the
		// runtime leaves out one-shot, cron and API-server sessions.
		ModelTitles: true,
		NewBackend:  func(_ *config.Config, cwd string) (backend.Backend, error) { return a.newBackend(cfg, cwd) },
		Warn:        func(msg string) { fmt.Fprintln(a.Stderr, "hermes:", msg) },
		Lock:        a.turnLock(lockOwner),
		Messenger:   a.messenger(cfg),
	}
}

// messenger is send_message's way to chats outside a gateway: the
// platforms a bot token reaches (nil when none: no send_message tool).
func (a *App) messenger(cfg *config.Loaded) tool.Messenger {
	if d, ok := a.cronDeliverer(cfg).(cron.Deliverers); ok && len(d) > 0 {
		return d
	}
	return nil
}

func enabled(b *bool) bool { return b == nil || *b }

// lockOwner is how a hermes chat run names itself in a session's turn lock.
const lockOwner = "hermes chat"

// turnLock is the session runtime's per-session turn lock
// (store.WaitLockSession), so two hermes processes never interleave their
// turns in one session. When another process holds it, the turn says so on
// stderr and waits (Ctrl-C gives up), then continues from the history that
// process stored.
func (a *App) turnLock(owner string) func(context.Context, store.Store, string) (func(), error) {
	return session.WaitLock(owner, func(b *store.BusyError) {
		fmt.Fprintf(a.Stderr, "hermes: %v; waiting for that turn to finish (Ctrl-C to give up)\n", b)
	})
}

// newBackend builds the terminal.backend named in config, telling the
// person once on stderr when it cannot open an environment (noticeBackend).
func (a *App) newBackend(cfg *config.Loaded, cwd string) (backend.Backend, error) {
	b, err := a.newTerminalBackend(cfg, cwd)
	if err != nil {
		return nil, err
	}
	return &noticeBackend{Backend: b, stderr: appStderr{a}}, nil
}

// appStderr writes to the App's Stderr of the moment of the write (the
// TUI swaps it for its notices while it runs).
type appStderr struct{ a *App }

func (w appStderr) Write(p []byte) (int, error) { return w.a.Stderr.Write(p) }

// newTerminalBackend builds the terminal.backend named in config
// (registry.New) with this process's home, environment and stderr.
func (a *App) newTerminalBackend(cfg *config.Loaded, cwd string) (backend.Backend, error) {
	return registry.New(a.backendDeps(), cfg, cwd)
}

// backendDeps are the backend registry's dependencies from this App.
func (a *App) backendDeps() registry.Deps {
	return registry.Deps{Home: a.Home(), Getenv: a.Getenv, Environ: a.Environ, Executable: a.Executable, Stderr: a.Stderr,
		Notice: func(line string) { fmt.Fprintf(appStderr{a}, "hermes: warning: %s\n", escapeControls(line)) }}
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

// approver answers the approval requests and clarify questions of the
// running turn; nil for runs where nobody can answer (approvals are then
// decided as headless and questions get "no user to ask").
type approver struct {
	approve func(ev session.Event) approval.Answer
	// clarify returns the person's answer to ev.Question, or false when
	// none comes (end of input, the question withdrawn).
	clarify func(ev session.Event) (string, bool)
}

// runTurn sends text to the open session and renders its events until
// the turn ends, answering approval requests and questions with ask.
func (rt *chatRuntime) runTurn(ctx context.Context, text string, ask *approver) (agent.TurnResult, error) {
	last, err := rt.session.Ask(ctx, text, session.AskOptions{
		Subscribe: session.SubscribeOptions{MaxPendingDeltaBytes: -1, Approver: ask != nil},
	}, func(ev session.Event) {
		switch ev.Kind {
		case session.ApprovalRequest:
			rt.render.mu.Lock()
			rt.render.endLine()
			rt.render.mu.Unlock()
			rt.session.Approve(ev.Approval.ID, ask.approve(ev))
		case session.ClarifyRequest:
			rt.render.mu.Lock()
			rt.render.endLine()
			rt.render.mu.Unlock()
			if answer, ok := ask.clarify(ev); ok {
				rt.session.Answer(ev.Question.ID, answer)
			} else {
				rt.session.Decline(ev.Question.ID)
			}
		default:
			rt.render.event(ev)
		}
	})
	if err != nil {
		return agent.TurnResult{}, err
	}
	return last.Result, last.Err
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
