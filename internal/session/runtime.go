// Package session is the session runtime: one process hosts many agent
// sessions (the CLI's one, a gateway's chats, API clients, ACP
// connections). A Runtime holds what sessions share (config, provider,
// backend, store, approvals, tools); a Session holds one conversation, its
// cached agent, its turn queue and its subscribers.
//
// One turn runs at a time per session: a message sent while a turn runs is
// queued (the default) or interrupts it. Events carry the session id and go
// to the session's subscribers; text deltas may be coalesced or dropped for
// a slow subscriber, everything else is always delivered (see Kind).
package session

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/sessionkeys"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/database"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/llm/providers"
	"github.com/hermes-go/hermes/internal/memory"
	"github.com/hermes-go/hermes/internal/skills"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/tool"
)

// DefaultMaxSessions bounds the sessions whose agents are kept in memory.
const DefaultMaxSessions = 64

// ErrClosed is returned after the runtime, session or subscription closed.
var ErrClosed = errors.New("session closed")

// Options configures a Runtime.
type Options struct {
	// Config is the loaded config, with flag overrides already applied.
	Config *config.Loaded
	// Home is HERMES_HOME; UserHome is $HOME.
	Home, UserHome string
	// Environ is the process environment (for secrets and the local backend).
	Environ func() []string
	Now     func() time.Time
	// RecordPath and ReplayPath are --record / --replay.
	RecordPath, ReplayPath string
	// Yolo skips dangerous-command approvals (--yolo).
	Yolo bool
	// IgnoreRules skips project context, SOUL.md and memory (--ignore-rules).
	IgnoreRules bool
	// Toolsets overrides the config's toolsets (--toolsets).
	Toolsets []string
	// Platform names the front end in the system prompt ("cli", "telegram"...).
	Platform string
	// NewBackend builds terminal.backend for the workspace cwd; nil builds
	// the local backend and refuses any other.
	NewBackend func(c *config.Config, cwd string) (backend.Backend, error)
	// Provider, when set, is used instead of building one from config
	// (ProviderName names it).
	Provider     llm.Provider
	ProviderName string
	// Warn receives one-line messages for the person ("warning: ..."; stderr
	// in the CLI, prefixed "hermes: ").
	Warn func(string)
	// Messenger sends send_message's texts to chats: the gateway's running
	// platforms, or outside a gateway the ones a bot token reaches. Nil (no
	// platform) leaves send_message out of the tools.
	Messenger tool.Messenger
	// MaxSessions bounds the cached sessions (LRU); 0 = DefaultMaxSessions.
	// Sessions with a running or queued turn or a subscriber are never evicted.
	MaxSessions int
	// Lock, when set, takes a cross-process lock on a session for the
	// length of one turn (state.db's per-session lock, see WaitLock);
	// unlock releases it. Within the process the runtime already runs one
	// turn at a time. Every front end should set it, so that two processes
	// never interleave their turns in one session.
	Lock func(ctx context.Context, st store.Store, sessionID string) (unlock func(), err error)
	// Files, when set, lets the file tools read and write through a front
	// end (an ACP client's editor buffers); nil uses the backend only.
	Files tool.FileAccess
	// MCPServers are MCP servers every session of this runtime connects
	// besides config.yaml's mcp_servers (a same-named entry here wins).
	MCPServers map[string]config.MCPServer
	// ModelTitles asks for model-written session titles with the main
	// model when auxiliary.title_generation names no model of its own
	// (front ends holding conversations set it; see Runtime.modelTitles).
	ModelTitles bool
	// ExitAfterClose says the process exits right after Close (a CLI
	// run): the session store may leave its small WAL to the next process
	// instead of checkpointing it (store.WithExitAfterClose).
	ExitAfterClose bool
}

// WaitLock is an Options.Lock taking state.db's per-session turn lock
// (store.WaitLockSession) as owner; when another process holds it, waiting
// is told once (to tell the person) and the turn waits for it.
func WaitLock(owner string, waiting func(*store.BusyError)) func(context.Context, store.Store, string) (func(), error) {
	return func(ctx context.Context, st store.Store, sessionID string) (func(), error) {
		return store.WaitLockSession(ctx, st, sessionID, owner, 0, waiting)
	}
}

// emptySessionGrace is how old a session without messages must be before
// the runtime deletes it at start: younger ones may belong to a run that
// is starting.
const emptySessionGrace = time.Hour

// Runtime hosts many sessions in one process. It is safe for concurrent use.
type Runtime struct {
	opts      Options
	cfg       *config.Config
	store     store.Store
	lazy      *store.Recorder
	provider  llm.Provider
	provName  string
	model     string
	popts     providers.Options
	fallbacks []agent.Route // fallback_providers, in order
	backend   backend.Backend
	approvals *approval.Service
	memory    *memory.Store
	skills    *skills.Library
	todo      *tool.TodoList
	processes *tool.ProcessTable
	browsers  *browser.Manager        // nil without Chromium
	tools     *tool.Registry          // the tools of Options.Platform's sessions
	allTools  *tool.Registry          // every tool, before toolsets are applied (see toolsFor)
	codeOpts  tool.ExecuteCodeOptions // execute_code's, for a subagent's own (its tools)
	redact    *Redactor
	cwd       string
	window    int
	closers   []func() error
	auxMu     sync.Mutex
	aux       map[config.AuxTask]providers.Aux // built by Auxiliary
	// delegation is the subagents' own model (childModel), when
	// delegation: names one; guarded by auxMu.
	delegation *providers.Aux
	auxErr     map[config.AuxTask]error // settings that did not resolve (told once)
	titles     sync.WaitGroup           // model-written titles in flight (Close waits)

	mu       sync.Mutex
	sessions map[string]*list.Element // session id → element of lru (*Session)
	lru      *list.List               // front = most recently used
	closed   bool
	turnSeq  int
	keys     sessionkeys.Index
}

// recorder is the store behind the process's write gate.
func (rt *Runtime) recorder() recorder {
	return recorder{st: rt.store, lazy: rt.lazy}
}

// New builds the shared pieces: store, provider, backend, approvals and
// tools. Close releases them.
func New(ctx context.Context, o Options) (*Runtime, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Environ == nil {
		o.Environ = func() []string { return nil }
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Platform == "" {
		o.Platform = "cli"
	}
	c := &o.Config.Config
	if err := config.CheckString("approvals.mode", c.Approvals.Mode); err != nil {
		// An unknown mode used to run silently as manual: `mode: of` meant
		// off to the user and prompted (or refused) every command.
		return nil, fmt.Errorf("%v, in %s; fix it with `hermes config set approvals.mode manual` (or smart, off)", err, o.Config.Source("approvals.mode"))
	}
	rt := &Runtime{opts: o, cfg: c, sessions: map[string]*list.Element{}, lru: list.New(),
		redact: NewRedactor(o.Config, o.Environ(), c.Terminal.EnvPassthrough, o.Home)}
	ok := false
	defer func() {
		if !ok {
			rt.closeShared()
		}
	}()
	var err error
	if rt.cwd, err = resolveCwd(c.Terminal.Cwd); err != nil {
		return nil, err
	}
	storeOpts := []store.Option{store.WithClock(o.Now)}
	if o.ExitAfterClose {
		storeOpts = append(storeOpts, store.WithExitAfterClose())
	}
	if rt.store, err = database.Open(context.Background(), c.Database, o.Home, o.Config.Getenv, storeOpts...); err != nil {
		return nil, err // already "session store PATH: ..." or names the database server
	}
	rt.closers = append(rt.closers, rt.store.Close)
	rt.keys = database.SessionKeys(rt.store, o.Home)
	rt.lazy = store.NewRecorder(rt.store)
	// Rows a killed run of an older build left without messages. Best
	// effort: a read-only HERMES_HOME must not stop the run here.
	_, _ = rt.store.PruneEmpty(ctx, emptySessionGrace)
	if err := rt.buildProvider(); err != nil {
		return nil, err
	}
	newBackend := o.NewBackend
	if newBackend == nil {
		newBackend = func(c *config.Config, cwd string) (backend.Backend, error) {
			if b := c.Terminal.Backend; b != "" && b != "local" {
				return nil, fmt.Errorf("terminal.backend %q is not supported here: use local", b)
			}
			return local.New(cwd, c.Terminal.EnvPassthrough, o.Environ)
		}
	}
	if rt.backend, err = newBackend(c, rt.cwd); err != nil {
		return nil, err
	}
	rt.closers = append(rt.closers, rt.backend.Close)
	rt.approvals = approval.New(approval.Config{
		Mode: c.Approvals.Mode, Yolo: o.Yolo, Isolated: backend.Isolated(rt.backend), Deny: c.Approvals.Deny,
		Allowlist: c.Approvals.CommandAllowlist, Timeout: time.Duration(c.Approvals.Timeout) * time.Second,
		Home: o.UserHome, HermesHome: o.Home, Cwd: rt.cwd, ProtectedPaths: c.Terminal.ProtectedPaths,
		SaveAllowlist: func(list []string) error {
			return config.Set(o.Home, "approvals.command_allowlist", "["+strings.Join(quoteAll(list), ", ")+"]")
		},
	})
	rt.approvals.Attach(approval.PrompterFunc(rt.prompt))
	if err := rt.buildTools(); err != nil {
		return nil, err
	}
	if enabled(c.Compression.Enabled) {
		rt.auxOrMain(config.AuxCompression)
		rt.window = c.Model.ContextLength
		if rt.provName != "replay" {
			rt.window = contextWindow(ctx, o.Home, rt.window, rt.popts, rt.provName)
		}
	}
	ok = true
	return rt, nil
}

func (rt *Runtime) buildProvider() error {
	c, o := rt.cfg, rt.opts
	rt.model = c.Model.Default
	rt.popts = providers.Options{
		Provider: c.Model.Provider, Model: c.Model.Default, BaseURL: c.Model.BaseURL, APIKey: c.Model.APIKey,
		Getenv: o.Config.Getenv, RecordPath: o.RecordPath, ReplayPath: o.ReplayPath,
		Timeouts: llm.Timeouts{Request: seconds(c.Model.RequestTimeout), Idle: seconds(c.Model.StreamIdleTimeout)},
		Retry: llm.RetryPolicy{OnRetry: func(ctx context.Context, attempt int, d time.Duration, err error) {
			retried(ctx, fmt.Sprintf("%v; retrying in %s (attempt %d)", err, d.Round(100*time.Millisecond), attempt))
		}},
	}
	if o.Provider != nil {
		rt.provider, rt.provName = o.Provider, o.ProviderName
		return nil
	}
	var err error
	if rt.provName, err = providers.Resolve(rt.popts); err != nil {
		return err
	}
	chain := c.Fallbacks()
	if rt.provName == "replay" {
		chain = nil // a recording plays back one provider's answers
	}
	rt.popts.Retry.NoRetryRefused = len(chain) > 0
	if rt.model == "" {
		// Hermes starts with the provider's default model when none is set.
		rt.model = providers.DefaultModel(rt.provName)
		rt.popts.Model = rt.model
	}
	if rt.provider, err = providers.New(rt.popts); err != nil {
		return err
	}
	if cl, isCloser := rt.provider.(io.Closer); isCloser {
		rt.closers = append(rt.closers, cl.Close)
	}
	rt.buildFallbacks(chain)
	rt.popts.Retry.NoRetryRefused = false // popts also serves /models and context-length look-ups
	return nil
}

// turnContextKey marks a turn's context with its session, so the shared
// provider's retry hook tells that session and no other.
type turnContextKey struct{}

// retried tells the session whose turn made the model call that the call
// is being retried (a Retry event). Other sessions hear nothing: the error
// text may be about another person's request.
func retried(ctx context.Context, text string) {
	s, ok := ctx.Value(turnContextKey{}).(*Session)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		s.publishLocked(Event{TurnID: s.running.ID, Kind: Retry, Text: text})
	}
}

// Recorder writes sessions to state.db (lazily for new sessions: Ensure
// writes a new session's row before its first message, Pending reports
// whether it is still unwritten).
func (rt *Runtime) Recorder() interface {
	Ensure(ctx context.Context, sessionID string) error
	Pending(sessionID string) bool
} {
	return rt.recorder()
}

// Home is HERMES_HOME.
func (rt *Runtime) Home() string { return rt.opts.Home }

// Store is the session store (state.db).
func (rt *Runtime) Store() store.Store { return rt.store }

// Approvals is the approval service every session's tools ask.
func (rt *Runtime) Approvals() *approval.Service { return rt.approvals }

// Model and ProviderName name the model and provider in use.
func (rt *Runtime) Model() string { return rt.model }

// ProviderName is the resolved provider ("openrouter", "custom", "replay"...).
func (rt *Runtime) ProviderName() string { return rt.provName }

// Redactor removes the process's secrets from text.
func (rt *Runtime) Redactor() *Redactor { return rt.redact }

// Tools is the registry of the enabled tools.
func (rt *Runtime) Tools() *tool.Registry { return rt.tools }

// ContextWindow is the model's context window in tokens (model.context_length,
// the endpoint's /models, else the model family's default).
func (rt *Runtime) ContextWindow() int {
	if rt.window > 0 {
		return rt.window
	}
	return agent.DefaultContextWindow(rt.model)
}

// ListModels lists the models the provider's /models offers (the /model
// picker); providers without a listing return an error.
func (rt *Runtime) ListModels(ctx context.Context) ([]string, error) {
	return providers.ListModels(ctx, rt.popts, 10*time.Second)
}

// Backend is the terminal backend every session's tools use.
func (rt *Runtime) Backend() backend.Backend { return rt.backend }

// Skills is the skills library (nil when skills are off).
func (rt *Runtime) Skills() *skills.Library { return rt.skills }

// Memory is the persistent memory store (nil when memory is off).
func (rt *Runtime) Memory() *memory.Store { return rt.memory }

// Config is the loaded configuration.
func (rt *Runtime) Config() *config.Config { return rt.cfg }

// Cwd is the workspace directory of the runtime's sessions (terminal.cwd).
func (rt *Runtime) Cwd() string { return rt.cwd }

// BackendKind names terminal.backend in use ("local", "box", "ssh").
func (rt *Runtime) BackendKind() string { return rt.backend.Kind() }

// Isolated reports whether the backend runs commands behind a boundary of
// its own (backend.Isolated: the box), where approvals ask nothing.
func (rt *Runtime) Isolated() bool { return backend.Isolated(rt.backend) }

// PreloadSkills prepends the named skills to text, as -s/--skills does for
// the first message of a run (the system prompt stays unchanged).
func (rt *Runtime) PreloadSkills(names []string, text string) (string, error) {
	if len(names) == 0 || rt.opts.IgnoreRules {
		return text, nil
	}
	loaded, err := rt.skills.Load(names)
	if err != nil {
		return "", err
	}
	return skills.FormatPreload(loaded) + "\n\n" + text, nil
}

// Close closes every session (cancelling running turns) and the shared
// pieces. It waits for running turns to return.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	var all []*Session
	for e := rt.lru.Front(); e != nil; e = e.Next() {
		all = append(all, e.Value.(*Session))
	}
	rt.mu.Unlock()
	for _, s := range all {
		s.shutdown()
	}
	// A title call started by a turn that has ended (bounded by its
	// timeout) writes to the store: it must finish before the store closes.
	rt.titles.Wait()
	return rt.closeShared()
}

// Drain waits until no session has a running or queued turn, or ctx ends
// (then it returns ctx.Err() and the turns keep running).
func (rt *Runtime) Drain(ctx context.Context) error {
	for {
		rt.mu.Lock()
		var busy *Session
		for e := rt.lru.Front(); e != nil; e = e.Next() {
			if s := e.Value.(*Session); s.Busy() {
				busy = s
				break
			}
		}
		rt.mu.Unlock()
		if busy == nil {
			return nil
		}
		if err := busy.WaitIdle(ctx); err != nil {
			return err
		}
	}
}

func (rt *Runtime) closeShared() error {
	var errs []error
	for i := len(rt.closers) - 1; i >= 0; i-- {
		if err := rt.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	rt.closers = nil
	return errors.Join(errs...)
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
