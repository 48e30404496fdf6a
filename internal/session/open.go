package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes-go/hermes/internal/agent"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// OpenOptions picks the session to open. Without Key, Resume or Continue a
// new session is created.
type OpenOptions struct {
	// Key names a conversation of a front end ("telegram:dm:42",
	// "api:<X-Hermes-Session-Id>"). The session last opened under the key
	// is resumed, across restarts (HERMES_HOME/sessions/sessions.json).
	Key string
	// New creates a fresh session even if Key has one (/new, /reset); the
	// key then names the new session.
	New bool
	// Resume is a session id, id prefix or title (-r/--resume).
	Resume string
	// Continue resumes the most recent session of any source (-c).
	Continue bool
	// Source is the state.db source of a new session (cli, oneshot,
	// telegram, api_server...); "" = cli.
	Source string
	// Platform names the front end in a new session's system prompt; ""
	// = the runtime's.
	Platform string
	// ExtraSystem is appended to a new session's system prompt (an API
	// client's system message).
	ExtraSystem string
	// History seeds a new session with earlier messages (an API client
	// sending the whole conversation); they are stored like any other.
	History []llm.Message
	// MCPServers are MCP servers this session connects besides
	// config.yaml's mcp_servers and Options.MCPServers: an ACP client's
	// session/new mcpServers. One named like a configured server never
	// replaces it: it connects as <name>-client (see Runtime.mcpServers),
	// and its env and header values join the runtime's Redactor. They apply
	// when the session is loaded into memory (created, resumed or
	// continued); a session already open keeps its servers.
	MCPServers map[string]config.MCPServer
	// PermitMCP, when set, is asked before each of MCPServers first starts
	// (blocking; the person's answer through the client); a server it
	// refuses never starts in this session. With the local backend those
	// servers run through it, under its guard (mcp.Options.ClientServers).
	PermitMCP func(ctx context.Context, name string, c config.MCPServer) bool
}

// clientMCP is a session's own MCP servers and who permits them.
type clientMCP struct {
	servers map[string]config.MCPServer
	permit  func(ctx context.Context, name string, c config.MCPServer) bool
}

// ErrNoSessionToContinue is returned by Open with Continue when state.db
// holds no session.
var ErrNoSessionToContinue = errors.New("no session to continue: start one with `hermes chat -q ...` first")

// Open returns the session picked by o, loading it from the store (or the
// cache) or creating it. A session stays cached until evicted (LRU, idle
// sessions only) or closed.
func (rt *Runtime) Open(ctx context.Context, o OpenOptions) (*Session, error) {
	ref := o.Resume
	if o.Key != "" && !o.New && ref == "" {
		var err error
		if ref, err = rt.keys.Get(ctx, o.Key); err != nil {
			return nil, fmt.Errorf("looking up the session of %s: %w", o.Key, err)
		}
	}
	var (
		s   *Session
		err error
	)
	switch {
	case ref != "":
		s, err = rt.resume(ctx, ref, o.Platform, clientMCP{o.MCPServers, o.PermitMCP})
		if errors.Is(err, store.ErrNotFound) && o.Key != "" && o.Resume == "" {
			s, err = rt.create(ctx, o) // the keyed session was deleted: start over
		}
	case o.Continue:
		var latest store.Session
		latest, err = rt.store.Latest(ctx, "")
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrNoSessionToContinue
		}
		if err == nil {
			s, err = rt.resume(ctx, latest.ID, o.Platform, clientMCP{o.MCPServers, o.PermitMCP})
		}
	default:
		s, err = rt.create(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	if o.Key != "" {
		if err := rt.keys.Set(ctx, o.Key, s.id); err != nil {
			rt.opts.Warn("warning: could not save the session index: " + err.Error())
		}
	}
	return s, nil
}

func (rt *Runtime) create(ctx context.Context, o OpenOptions) (*Session, error) {
	source := o.Source
	if source == "" {
		source = "cli"
	}
	id, err := rt.store.NewSessionID()
	if err != nil {
		return nil, err
	}
	system := rt.buildSystemPrompt(id, o.Platform)
	if o.ExtraSystem != "" {
		system += "\n\n" + o.ExtraSystem
	}
	// The row is written with the first message (store.Recorder), so a
	// session nobody spoke in leaves nothing behind.
	ns := store.NewSession{ID: id, Source: source, Model: rt.model, Provider: rt.provName, Cwd: rt.cwd, SystemPrompt: system}
	if err := rt.lazy.Defer(ns); err != nil {
		return nil, err
	}
	rec := rt.recorder()
	for _, m := range o.History {
		if _, err := rec.AppendMessage(ctx, id, m); err != nil {
			return nil, err
		}
	}
	st := store.Session{ID: id, Source: source, MessageCount: len(o.History)}
	return rt.add(rt.newSession(st, system, o.History, o.Platform, clientMCP{o.MCPServers, o.PermitMCP}))
}

func (rt *Runtime) resume(ctx context.Context, ref, platform string, servers clientMCP) (*Session, error) {
	if s := rt.lookup(ref); s != nil {
		rt.touch(s)
		return s, nil
	}
	st, err := rt.store.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if s := rt.lookup(st.ID); s != nil {
		rt.touch(s)
		return s, nil
	}
	history, err := rt.store.Messages(ctx, st.ID)
	if err != nil {
		return nil, err
	}
	system := st.SystemPrompt
	if system == "" {
		system = rt.buildSystemPrompt(st.ID, platform)
		if err := rt.store.SetSystemPrompt(ctx, st.ID, system); err != nil {
			return nil, err
		}
	}
	s := rt.newSession(st, system, history, platform, servers)
	if m := storedModel(st.Metadata); m != "" {
		s.agent.SetModel(m)
	}
	s.unrecorded = len(agent.UnrecordedResults(history)) > 0
	rt.todo.Restore(st.ID, history)
	return rt.add(s)
}

// add caches s (or returns the session another caller added first) and
// evicts idle sessions past MaxSessions.
func (rt *Runtime) add(s *Session) (*Session, error) {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		if s.mcp != nil {
			_ = s.mcp.Close()
		}
		return nil, ErrClosed
	}
	if e, ok := rt.sessions[s.id]; ok {
		rt.lru.MoveToFront(e)
		rt.mu.Unlock()
		if s.mcp != nil {
			_ = s.mcp.Close() // another caller's copy of the session won
		}
		return e.Value.(*Session), nil
	}
	s.elem = rt.lru.PushFront(s)
	rt.sessions[s.id] = s.elem
	var evict []*Session
	for e := rt.lru.Back(); e != nil && rt.lru.Len()-len(evict) > rt.opts.MaxSessions; e = e.Prev() {
		if c := e.Value.(*Session); c != s && c.evictable() {
			evict = append(evict, c)
		}
	}
	for _, c := range evict {
		rt.lru.Remove(c.elem)
		delete(rt.sessions, c.id)
	}
	rt.mu.Unlock()
	for _, c := range evict {
		c.shutdown()
	}
	return s, nil
}

// evictable reports whether nothing holds the session: no turn, no
// subscriber, no pending approval.
func (s *Session) evictable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running == nil && len(s.queue) == 0 && len(s.subs) == 0 && len(s.pending) == 0
}

// Cached reports how many sessions are held in memory.
func (rt *Runtime) Cached() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.lru.Len()
}

func (rt *Runtime) lookup(id string) *Session {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if e, ok := rt.sessions[id]; ok {
		return e.Value.(*Session)
	}
	return nil
}

func (rt *Runtime) touch(s *Session) {
	rt.mu.Lock()
	if e, ok := rt.sessions[s.id]; ok && e == s.elem {
		rt.lru.MoveToFront(e)
	}
	rt.mu.Unlock()
}

func (rt *Runtime) remove(s *Session) {
	rt.mu.Lock()
	if e, ok := rt.sessions[s.id]; ok && e == s.elem {
		rt.lru.Remove(e)
		delete(rt.sessions, s.id)
	}
	rt.mu.Unlock()
}
