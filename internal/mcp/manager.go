// Package mcp is hermes' Model Context Protocol client: it connects the
// MCP servers of a session (config.yaml mcp_servers, plus servers an ACP
// client names) and offers their tools to the model as
// mcp__<server>__<tool>, with list_resources/read_resource and
// list_prompts/get_prompt utilities for servers that offer resources or
// prompts. It uses the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// Servers connect in parallel when the session opens; the first turn waits
// for them, each bounded by its connect_timeout. A server answers
// roots/list with the session's workspace, re-lists its tools on
// notifications/tools/list_changed, and may sample the session's model
// only with sampling: true. A server that fails to start or dies is told
// once on stderr and once to the model; the other servers keep working and
// it is restarted on next use (failed starts back off from 1 s to 1 min).
// Calls of an untrusted server's tools go through the approval service.
// With terminal.backend: box, stdio servers run inside the session's box
// unless marked host: true.
package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/secret"
	"github.com/hermes-go/hermes/internal/tool"
)

// Options configures the MCP servers of one session.
type Options struct {
	// Servers are the servers by name; disabled entries are skipped.
	Servers map[string]config.MCPServer
	// SessionID names the session (its box, its approvals).
	SessionID string
	// Workspace is the session's working directory on the host; it is the
	// root host and HTTP servers get (a box-run server gets the box's).
	Workspace string
	// Backend is the session's terminal backend: with Kind() "box", stdio
	// servers without host: true run inside the session's environment.
	Backend backend.Backend
	// Environ is hermes' environment; host servers inherit only PATH, HOME,
	// locale and temp variables from it.
	Environ func() []string
	// Tools is the session's registry; each server's tools are the
	// toolset mcp-<server>.
	Tools *tool.Registry
	// Toolsets is the --toolsets / toolsets: selection (see
	// tool.ToolsetSelected); servers it leaves out are not connected.
	Toolsets []string
	// Approvals asks before untrusted servers' tools run.
	Approvals *approval.Service
	// Redact removes the process's secrets from text (server errors,
	// results); each server's own env and header secrets are removed too.
	Redact func(string) string
	// Warn tells the person (stderr), one line per event.
	Warn func(string)
	// Sample answers sampling/createMessage for servers with sampling:
	// true; nil refuses sampling for all.
	Sample SampleFunc
	// Version is hermes' version, sent as the client version.
	Version string
	// Now is the clock (backoff); nil = time.Now.
	Now func() time.Time
	// CacheDir, when set, keeps each server's last tool listing
	// (<server>.json: names, descriptions, schemas) so that a server that
	// fails to start still offers its tools; a call then tells the model
	// why it is unavailable and retries the start.
	CacheDir string
	// ClientServers names the servers the client (an ACP editor) supplied
	// rather than config.yaml: each starts only once Permit allows it (a
	// refused one never starts in this session) and, with the local
	// backend, runs through it, under its guard like any command, instead
	// of as a bare host process.
	ClientServers map[string]bool
	// Permit asks the person whether client server name may start
	// (blocking until they answer or ctx ends); nil allows all.
	Permit func(ctx context.Context, name string, c config.MCPServer) bool
	// ToolsChanged, when set, is called after a server's tools were put
	// into Tools (connected, restarted, or re-listed after
	// notifications/tools/list_changed).
	ToolsChanged func(server string)
}

// Manager holds the MCP servers of one session. Close disconnects them.
type Manager struct {
	opts    Options
	ctx     context.Context
	cancel  context.CancelFunc
	servers []*server
	wg      sync.WaitGroup
	initial []chan struct{}

	mu      sync.Mutex
	closed  bool
	secrets map[*server]*strings.Replacer
}

// Start connects every enabled server of o in the background and returns
// at once; Ready waits for the first attempts. Entries that fail Check are
// told on Warn and skipped.
func Start(o Options) *Manager {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Environ == nil {
		o.Environ = func() []string { return nil }
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{opts: o, ctx: ctx, cancel: cancel, secrets: map[*server]*strings.Replacer{}}
	names := make([]string, 0, len(o.Servers))
	for n := range o.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := o.Servers[n]
		if !c.IsEnabled() || !tool.ToolsetSelected(o.Toolsets, Toolset(n)) {
			continue
		}
		if err := c.Check(n); err != nil {
			m.warn("warning: " + err.Error() + "; the server is skipped")
			continue
		}
		s := &server{m: m, name: n, cfg: c}
		m.secrets[s] = secretReplacer(c)
		m.servers = append(m.servers, s)
	}
	for _, s := range m.servers {
		m.initial = append(m.initial, s.start())
	}
	return m
}

// secretReplacer redacts a server's env and header secrets (and their
// encoded forms).
func secretReplacer(c config.MCPServer) *strings.Replacer {
	var forms []string
	for _, v := range c.SecretValues() {
		forms = append(forms, secret.Forms(v)...) // none for values under 8 bytes
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, "[REDACTED]")
	}
	return strings.NewReplacer(pairs...)
}

// Ready waits until every server's first connect attempt has ended (each
// bounded by its connect_timeout) or ctx ends.
func (m *Manager) Ready(ctx context.Context) error {
	for _, c := range m.initial {
		if c == nil {
			continue
		}
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Revive starts, in the background, every server that is down and whose
// backoff has passed (called when a turn starts: a server that failed at
// session start gets its tools back when it comes up).
func (m *Manager) Revive() {
	for _, s := range m.servers {
		s.mu.Lock()
		down := s.cs == nil && s.connecting == nil && !s.denied && !m.opts.Now().Before(s.retryAt)
		s.mu.Unlock()
		if down {
			s.start()
		}
	}
}

// Status is one server's state, for `hermes mcp test` and status lines.
type Status struct {
	Name  string
	Up    bool
	Err   string // redacted; "" when up
	Tools []string
}

// Status reports each server's state, by name.
func (m *Manager) Status() []Status {
	var out []Status
	for _, s := range m.servers {
		s.mu.Lock()
		st := Status{Name: s.name, Up: s.cs != nil}
		if s.lastErr != nil && !st.Up {
			st.Err = m.redact(s, s.lastErr.Error())
		}
		s.mu.Unlock()
		st.Tools = s.toolNames()
		out = append(out, st)
	}
	return out
}

// Close disconnects every server (stdio servers are stopped), removes
// their tools and waits for the background work.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range m.servers {
		if m.opts.Tools != nil {
			m.opts.Tools.RemoveToolset(Toolset(s.name))
		}
		wg.Add(1)
		go func() { // in parallel: a server may take terminateAfter to exit
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
	m.wg.Wait()
	return nil
}

func (m *Manager) closing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// publish puts a server's current tools into the registry.
func (m *Manager) publish(s *server) {
	if m.opts.Tools == nil || m.closing() {
		return
	}
	s.mu.Lock()
	tools := make([]tool.Tool, 0, len(s.tools))
	var taken []string
	for _, t := range s.tools {
		// Two server names can sanitize alike (my.srv, my_srv): a tool
		// must not replace another server's tool of the same name.
		if old, ok := m.opts.Tools.Get(t.Spec().Name); ok && old.Toolset() != Toolset(s.name) {
			taken = append(taken, t.Spec().Name)
			continue
		}
		tools = append(tools, t)
	}
	s.mu.Unlock()
	if len(taken) > 0 {
		m.warn(fmt.Sprintf("warning: MCP server %s: left out %s, already offered by another server; rename one of the servers in mcp_servers", s.name, strings.Join(taken, ", ")))
	}
	m.opts.Tools.SetToolset(Toolset(s.name), tools)
	if m.opts.ToolsChanged != nil {
		m.opts.ToolsChanged(s.name)
	}
}

// goRelist re-lists a server's tools off the notification's goroutine.
// Notifications that arrive while a listing runs are coalesced into one
// more listing after it, so a server flooding list_changed costs at most
// one listing at a time, not a goroutine and a request per notification.
func (m *Manager) goRelist(s *server) {
	if m.closing() {
		return
	}
	s.mu.Lock()
	if s.relisting {
		s.relistAgain = true
		s.mu.Unlock()
		return
	}
	s.relisting = true
	s.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			s.relist()
			s.mu.Lock()
			if !s.relistAgain || m.closing() {
				s.relisting = false
				s.mu.Unlock()
				return
			}
			s.relistAgain = false
			s.mu.Unlock()
		}
	}()
}

// redact removes the process's and the server's secrets from text.
func (m *Manager) redact(s *server, text string) string {
	if r := m.secrets[s]; r != nil {
		text = r.Replace(text)
	}
	return m.opts.Redact(text)
}

// warn tells the person; a server's text in msg (its stderr, its error)
// has its terminal controls shown as text.
func (m *Manager) warn(msg string) { m.opts.Warn(approval.Printable(msg)) }
