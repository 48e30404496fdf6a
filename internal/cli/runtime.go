package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/llm/textcall"
	"github.com/hermes-go/hermes/internal/memory"
	"github.com/hermes-go/hermes/internal/prompt"
	"github.com/hermes-go/hermes/internal/skills"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"
)

// chatRuntime is everything one chat run needs, built from flags and config.
type chatRuntime struct {
	app       *App
	cfg       *config.Loaded
	opts      *chatOptions
	store     *store.Store
	recorder  *store.Recorder
	provider  llm.Provider
	provName  string
	model     string
	backend   backend.Backend
	approvals *approval.Service
	memory    *memory.Store
	skills    *skills.Library
	todo      *tool.TodoList
	processes *tool.ProcessTable
	tools     *tool.Registry
	agent     *agent.Agent
	render    *renderer
	redact    *redactor
	session   *agent.Session
	// seen is the session's stored message count when this process last
	// read or wrote it; another process's turn in between changes it.
	seen int
	// unrecorded is set when the loaded history ends with tool calls that
	// have no stored result; runTurn stores agent.UnknownOutcomeResult for
	// them once it holds the turn lock.
	unrecorded bool
	cwd        string
	closers    []func() error
}

// Close releases the runtime's resources in reverse order of acquisition.
func (rt *chatRuntime) Close() error {
	var errs []error
	for i := len(rt.closers) - 1; i >= 0; i-- {
		if err := rt.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// newRuntime loads config, applies flags, opens the store and builds the
// provider, backend, tools and agent. It does not pick the session.
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
	if err := config.CheckString("model.api_mode", cfg.Config.Model.APIMode); err != nil {
		// Reported on every run, not only by `config check`: the value is
		// ignored and the wire follows model.provider.
		fmt.Fprintf(a.Stderr, "hermes: warning: %v (from %s); it is ignored and the API follows model.provider; fix it with `hermes config set model.api_mode chat_completions` or `hermes config unset model.api_mode`\n",
			err, cfg.Source("model.api_mode"))
	}
	if err := config.CheckString("approvals.mode", cfg.Config.Approvals.Mode); err != nil {
		// An unknown mode used to run silently as manual: `mode: of` meant
		// off to the user and prompted (or refused) every command.
		return nil, fmt.Errorf("%v, in %s; fix it with `hermes config set approvals.mode manual` (or smart, off)", err, cfg.Source("approvals.mode"))
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
	c := &cfg.Config
	rt := &chatRuntime{app: a, cfg: cfg, opts: o, render: r,
		redact: newRedactor(cfg, a.Environ(), c.Terminal.EnvPassthrough, a.Home())}
	ok := false
	defer func() {
		if !ok {
			rt.Close()
		}
	}()

	rt.cwd, err = resolveCwd(c.Terminal.Cwd)
	if err != nil {
		return nil, err
	}
	if rt.store, err = a.openSessionStore(); err != nil {
		return nil, err // already "session store: open PATH: ..."
	}
	rt.closers = append(rt.closers, rt.store.Close)
	rt.recorder = rt.store.NewRecorder()
	// Rows a killed run of an older build left without messages. Best
	// effort: a read-only HERMES_HOME must not stop the run here.
	_, _ = rt.store.PruneEmpty(ctx, emptySessionGrace)

	rt.model = c.Model.Default
	popts := providers.Options{
		Provider: c.Model.Provider, Model: c.Model.Default, BaseURL: c.Model.BaseURL, APIKey: c.Model.APIKey,
		Getenv: cfg.Getenv, RecordPath: o.record, ReplayPath: o.replay,
		Timeouts: llm.Timeouts{Request: seconds(c.Model.RequestTimeout), Idle: seconds(c.Model.StreamIdleTimeout)},
		Retry: llm.RetryPolicy{OnRetry: func(attempt int, d time.Duration, err error) {
			r.event(agent.Event{Kind: agent.EventRetry, Text: fmt.Sprintf("%v; retrying in %s (attempt %d)", err, d.Round(100*time.Millisecond), attempt)})
		}},
	}
	if rt.provName, err = providers.Resolve(popts); err != nil {
		return nil, err
	}
	if rt.provider, err = providers.New(popts); err != nil {
		return nil, err
	}
	a.reasoningNotice(rt.provName, c.Agent.ReasoningEffort)
	if cl, isCloser := rt.provider.(io.Closer); isCloser {
		rt.closers = append(rt.closers, cl.Close)
	}

	environ := a.Environ
	if rt.backend, err = a.newBackend(cfg, rt.cwd, environ); err != nil {
		return nil, err
	}
	rt.backend = &noticeBackend{Backend: rt.backend, stderr: a.Stderr}
	rt.closers = append(rt.closers, rt.backend.Close)
	secrets := rt.redact.values
	home := a.Home()
	rt.approvals = approval.New(approval.Config{
		Mode: c.Approvals.Mode, Yolo: o.yolo, Backend: rt.backend.Kind(), Deny: c.Approvals.Deny,
		Allowlist: c.Approvals.CommandAllowlist, Timeout: time.Duration(c.Approvals.Timeout) * time.Second,
		Home: a.Getenv("HOME"), HermesHome: home, Cwd: rt.cwd,
		SaveAllowlist: func(list []string) error {
			return config.Set(home, "approvals.command_allowlist", "["+strings.Join(quoteAll(list), ", ")+"]")
		},
	})
	rt.memory = memory.NewStore(filepath.Join(home, "memories"), c.Memory.MemoryCharLimit, c.Memory.UserCharLimit, a.Now)
	rt.skills = skills.NewLibrary(skills.Roots(home, c.Skills.ExternalDirs, rt.cwd, a.Getenv("HOME"))...)
	rt.todo = tool.NewTodoList()
	rt.processes = tool.NewProcessTable()

	fileOpts := tool.FileToolOptions{Backend: rt.backend, Home: a.Getenv("HOME"), HermesHome: home}
	all := tool.NewRegistry(
		tool.NewTerminalTool(tool.TerminalOptions{
			Backend: rt.backend, Approvals: rt.approvals, OutputDir: filepath.Join(home, "cache", "terminal"),
			Timeout: time.Duration(c.Terminal.Timeout) * time.Second, Secrets: secrets, Processes: rt.processes,
		}),
		tool.NewProcessTool(rt.processes, secrets, rt.approvals),
		tool.NewReadFileTool(fileOpts),
		tool.NewWriteFileTool(fileOpts),
		tool.NewPatchTool(fileOpts),
		tool.NewSearchFilesTool(fileOpts),
		tool.NewSessionSearch(rt.store),
		tool.NewSkillsList(rt.skills),
		tool.NewSkillView(rt.skills),
		tool.NewSkillManage(rt.skills),
		rt.todo,
	)
	if enabled(c.Memory.MemoryEnabled) || enabled(c.Memory.UserProfileEnabled) {
		all.Add(tool.NewMemory(rt.memory))
	}
	toolsets := o.toolsets
	if len(toolsets) == 0 {
		toolsets = c.Toolsets
	}
	unknown, unavailable := all.CheckToolsets(toolsets)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown toolset %s (--toolsets or toolsets: in config.yaml); available: %s",
			strings.Join(unknown, ", "), strings.Join(all.Toolsets(), ", "))
	}
	if len(unavailable) > 0 {
		fmt.Fprintf(a.Stderr, "hermes: warning: toolset %s is not available in this build\n", strings.Join(unavailable, ", "))
	}
	rt.tools = all.Filter(toolsets)
	if len(rt.tools.Names()) == 0 {
		fmt.Fprintln(a.Stderr, "hermes: warning: no tools are enabled for this run")
	}
	rt.closers = append(rt.closers, func() error {
		if rt.session != nil {
			rt.processes.KillSession(rt.session.ID)
		}
		return nil
	})

	maxTurns := c.Agent.MaxTurns
	var compactor agent.Compactor
	if enabled(c.Compression.Enabled) {
		window := c.Model.ContextLength
		if rt.provName != "replay" {
			window = a.contextWindow(ctx, window, popts, rt.provName)
		}
		compactor = agent.NewCompressor(agent.CompressorOptions{
			Provider: rt.provider, Model: rt.model, ContextWindow: window,
			Threshold: c.Compression.Threshold, ProtectFirstN: c.Compression.ProtectFirstN, ProtectLastN: c.Compression.ProtectLastN,
			Pending: rt.todo.Pending, Rewriter: storeRewriter{rt.store}, SpillDir: filepath.Join(home, "cache", "context"),
			Notice: func(s string) { r.event(agent.Event{Kind: agent.EventNotice, Text: s}) },
		})
	}
	rt.agent = agent.New(agent.Options{
		Provider: rt.provider, Model: rt.model, Tools: rt.tools, Recorder: rt.recorder,
		MaxTurns: maxTurns, MaxTokens: c.Model.MaxTokens, ReasoningEffort: c.Agent.ReasoningEffort,
		ParseTextToolCalls: textcall.Extract, Compactor: compactor, OnEvent: r.event, Now: a.Now,
		Redact: rt.redact.Redact,
	})
	ok = true
	return rt, nil
}

func enabled(b *bool) bool { return b == nil || *b }

// seconds converts a config duration in seconds (0 = default).
func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// resolveCwd turns terminal.cwd into an absolute directory.
func resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		cwd = "."
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", fmt.Errorf("terminal.cwd %q is not a directory; fix it with `hermes config set terminal.cwd DIR`", cwd)
	}
	return abs, nil
}

// newBackend builds the terminal.backend named in config.
func (a *App) newBackend(cfg *config.Loaded, cwd string, environ func() []string) (backend.Backend, error) {
	c := &cfg.Config
	switch c.Terminal.Backend {
	case "", "local":
		return a.newLocalBackend(c, cwd, environ)
	case "box":
		return a.newBoxBackend(c, cwd)
	default:
		return nil, fmt.Errorf("%s: %q is not supported: use local or box (`hermes config set terminal.backend box`)", cfg.Where("terminal.backend"), c.Terminal.Backend)
	}
}

// newLocalBackend builds the local backend under terminal.local_sandbox.
// An unknown mode is an error (never a silent "off"); the hermes process
// is made non-dumpable so that, even unconfined, a command of another user
// id, or without CAP_SYS_PTRACE, cannot read its environment or memory
// through /proc.
func (a *App) newLocalBackend(c *config.Config, cwd string, environ func() []string) (backend.Backend, error) {
	mode := c.Terminal.LocalSandbox
	switch mode {
	case "", "workspace-write", "read-only", "off":
	default:
		return nil, fmt.Errorf("terminal.local_sandbox %q is not one of workspace-write, read-only, off; fix it with `hermes config set terminal.local_sandbox workspace-write`", mode)
	}
	home := filepath.Clean(a.Home())
	for _, w := range c.Terminal.WritablePaths {
		p := w
		if rest, ok := strings.CutPrefix(p, "~"); ok && (rest == "" || rest[0] == '/') {
			p = a.Getenv("HOME") + rest
		}
		if p = filepath.Clean(p); p == home || strings.HasPrefix(p, home+"/") {
			return nil, fmt.Errorf("terminal.writable_paths: %q is inside HERMES_HOME (%s), which commands may never write; remove it with `hermes config set terminal.writable_paths [...]`", w, home)
		}
	}
	if err := local.HideProcess(); err != nil {
		fmt.Fprintln(a.Stderr, "hermes: warning:", err)
	}
	return local.NewWithOptions(local.Options{
		Cwd: cwd, Passthrough: c.Terminal.EnvPassthrough, Environ: environ,
		Sandbox: local.Sandbox(mode), WritablePaths: c.Terminal.WritablePaths, HermesHome: a.Home(),
		Supervise: true, Warn: a.Stderr,
	})
}

// openSession resumes the session named by -c/--resume or creates a new
// one with a freshly built system prompt.
func (rt *chatRuntime) openSession(ctx context.Context, source string) error {
	st := rt.store
	var (
		sess store.Session
		err  error
	)
	switch {
	case rt.opts.resume != "":
		sess, err = st.Resolve(ctx, rt.opts.resume)
	case rt.opts.continueLast:
		sess, err = st.Latest(ctx, "")
		if errors.Is(err, store.ErrNotFound) {
			return errors.New("no session to continue: start one with `hermes chat -q ...` first")
		}
	default:
		return rt.newSession(ctx, source)
	}
	if err != nil {
		return err
	}
	history, err := st.Messages(ctx, sess.ID)
	if err != nil {
		return err
	}
	// Stored by runTurn under the session's turn lock: another run may
	// still be running this call and store its real result.
	rt.unrecorded = len(agent.UnrecordedResults(history)) > 0
	system := sess.SystemPrompt
	if system == "" {
		system = rt.buildSystemPrompt(sess.ID)
		if err := st.SetSystemPrompt(ctx, sess.ID, system); err != nil {
			return err
		}
	}
	rt.session = &agent.Session{ID: sess.ID, System: system, History: agent.RepairHistory(history)}
	rt.seen = sess.MessageCount
	rt.todo.Restore(sess.ID, history)
	return nil
}

// loadHistory returns the stored messages of session id. Tool calls that
// a killed run left without a result get agent.UnknownOutcomeResult, stored
// here the first time a resume finds them (see agent.UnrecordedResults).
// Call it only while holding the session's turn lock.
func (rt *chatRuntime) loadHistory(ctx context.Context, id string) ([]llm.Message, error) {
	history, err := rt.store.Messages(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, m := range agent.UnrecordedResults(history) {
		if _, err := rt.store.AppendMessage(ctx, id, m); err != nil {
			return nil, fmt.Errorf("saving the unknown-outcome result of an interrupted tool call: %w", err)
		}
		history = append(history, m)
	}
	return history, nil
}

// emptySessionGrace is how old a session without messages must be before
// a run deletes it: younger ones may belong to a run that is starting.
const emptySessionGrace = time.Hour

// newSession starts a session whose row is written with its first message
// (store.Recorder), so a run killed before that leaves nothing behind.
func (rt *chatRuntime) newSession(ctx context.Context, source string) error {
	id, err := rt.store.NewSessionID()
	if err != nil {
		return err
	}
	system := rt.buildSystemPrompt(id)
	if err := rt.recorder.Defer(store.NewSession{
		ID: id, Source: source, Model: rt.model, Provider: rt.provName, Cwd: rt.cwd, SystemPrompt: system,
	}); err != nil {
		return err
	}
	rt.session = &agent.Session{ID: id, System: system}
	rt.seen = 0
	return nil
}

// lockOwner is how a hermes chat run names itself in a session's turn lock.
const lockOwner = "hermes chat"

// runTurn runs one turn of rt.session while holding the session's turn
// lock (store.LockSession), so two hermes processes never interleave their
// turns in one session. When another process holds it, runTurn says so on
// stderr and waits (Ctrl-C gives up), then continues from the history that
// process stored.
func (rt *chatRuntime) runTurn(ctx context.Context, text string) (agent.TurnResult, error) {
	id := rt.session.ID
	unlock, err := rt.store.WaitLockSession(ctx, id, lockOwner, 0, func(b *store.BusyError) {
		fmt.Fprintf(rt.app.Stderr, "hermes: %v; waiting for that turn to finish (Ctrl-C to give up)\n", b)
	})
	if err != nil {
		if ctx.Err() != nil {
			return agent.TurnResult{}, agent.ErrCancelled
		}
		return agent.TurnResult{}, err
	}
	defer unlock()
	if !rt.recorder.Pending(id) {
		sess, err := rt.store.Session(ctx, id)
		if err != nil {
			return agent.TurnResult{}, err
		}
		if sess.MessageCount != rt.seen || rt.unrecorded {
			rt.unrecorded = false
			history, err := rt.loadHistory(ctx, id)
			if err != nil {
				return agent.TurnResult{}, err
			}
			rt.session.History = agent.RepairHistory(history)
			rt.todo.Restore(id, history)
		}
	}
	res, err := rt.agent.RunTurn(ctx, rt.session, text)
	if sess, serr := rt.store.Session(context.WithoutCancel(ctx), id); serr == nil {
		rt.seen = sess.MessageCount
	}
	return res, err
}

// buildSystemPrompt assembles the session's system prompt once: identity,
// guidance, frozen memory snapshots, the skills index and project context.
func (rt *chatRuntime) buildSystemPrompt(sessionID string) string {
	c := &rt.cfg.Config
	var memBlock, userBlock string
	if !rt.opts.ignoreRules {
		if enabled(c.Memory.MemoryEnabled) {
			memBlock, _ = rt.memory.Snapshot(memory.TargetMemory)
		}
		if enabled(c.Memory.UserProfileEnabled) {
			userBlock, _ = rt.memory.Snapshot(memory.TargetUser)
		}
	}
	res := prompt.Assemble(prompt.Options{
		Home: rt.app.Home(), Cwd: rt.cwd, IgnoreRules: rt.opts.ignoreRules, ToolNames: rt.tools.Names(),
		SystemPrompt: c.Agent.SystemPrompt, MemoryBlock: memBlock, UserBlock: userBlock,
		SkillsIndex: rt.skills.Index(), ContextMaxChars: c.ContextFileMaxChars,
		Now: rt.app.Now(), SessionID: sessionID, Platform: "cli",
	})
	for _, w := range res.Warnings {
		fmt.Fprintln(rt.app.Stderr, "hermes: warning:", w)
	}
	for _, f := range res.Findings {
		// Detail starts with "FILE:LINE:", so the person knows which file to fix.
		fmt.Fprintf(rt.app.Stderr, "hermes: blocked suspicious text in project context (%s): %s\n", f.Kind, f.Detail)
	}
	return res.Text
}

// storeRewriter adapts the session store to agent.HistoryRewriter.
type storeRewriter struct{ st *store.Store }

func (w storeRewriter) RewriteHistory(ctx context.Context, sessionID string, msgs []llm.Message) error {
	return w.st.ReplaceActive(ctx, sessionID, msgs)
}
