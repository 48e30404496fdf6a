package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/tool"
)

// Backoff bounds of restarting a failed server: the wait doubles from
// minBackoff after each failed start, up to maxBackoff.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// server is one configured MCP server of a session: its connection (nil
// while down), its last tool listing and its restart state.
type server struct {
	m    *Manager
	name string
	cfg  config.MCPServer

	mu          sync.Mutex
	cs          *sdk.ClientSession
	connecting  chan struct{} // closed when the running connect ends; nil when none runs
	lastErr     error
	failures    int
	retryAt     time.Time
	reported    bool // the current outage was told on stderr
	untold      bool // the current outage was not yet told to the model
	stale       bool // list_changed came before the listing was stored
	relisting   bool // a re-listing runs (goRelist)
	relistAgain bool // list_changed came while it ran: list once more
	tools       []tool.Tool
	permitted   bool // a client server the person allowed (Options.Permit)
	denied      bool // a client server the person refused: never started
}

// errDenied is the connect error of a client server the person refused.
var errDenied = errors.New("the person did not allow it to start")

// inBox reports whether the server runs inside the session's box.
func (s *server) inBox() bool {
	return s.cfg.Stdio() && !s.cfg.Host && s.m.opts.Backend != nil && s.m.opts.Backend.Kind() == "box"
}

// inEnv reports whether the server runs through the session's backend:
// in the box (inBox), or under the local backend's guard for a server the
// client supplied.
func (s *server) inEnv() bool {
	return s.inBox() || (s.cfg.Stdio() && s.m.opts.ClientServers[s.name] && s.m.opts.Backend != nil && s.m.opts.Backend.Kind() == "local")
}

// permit asks Options.Permit once before a client server first starts.
func (s *server) permit() bool {
	s.mu.Lock()
	ask := s.m.opts.ClientServers[s.name] && s.m.opts.Permit != nil && !s.permitted
	s.mu.Unlock()
	if !ask {
		return true
	}
	ok := s.m.opts.Permit(s.m.ctx, s.name, s.cfg)
	s.mu.Lock()
	s.permitted, s.denied = ok, !ok
	s.mu.Unlock()
	return ok
}

// timeout is one call's bound.
func (s *server) timeout() time.Duration {
	if s.cfg.Timeout > 0 {
		return time.Duration(s.cfg.Timeout) * time.Second
	}
	return config.DefaultMCPTimeout * time.Second
}

func (s *server) connectTimeout() time.Duration {
	if s.cfg.ConnectTimeout > 0 {
		return time.Duration(s.cfg.ConnectTimeout) * time.Second
	}
	return config.DefaultMCPConnectTimeout * time.Second
}

// start begins a connect unless one runs or the session is up; it returns
// the channel closed when the connect ends (nil when up).
func (s *server) start() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != nil || s.denied || s.m.closing() {
		return nil
	}
	if s.connecting != nil {
		return s.connecting
	}
	done := make(chan struct{})
	s.connecting = done
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		cs, tools, err := s.connect()
		s.connected(cs, tools, err)
		close(done)
	}()
	return done
}

// connect starts the server, initializes the session and lists its tools,
// within connect_timeout.
func (s *server) connect() (*sdk.ClientSession, []tool.Tool, error) {
	if !s.permit() { // the wait for the person is not the server's connect time
		return nil, nil, errDenied
	}
	ctx, cancel := context.WithTimeout(s.m.ctx, s.connectTimeout())
	defer cancel()
	var sample SampleFunc
	if s.cfg.Sampling.Enabled {
		sample = s.m.opts.Sample
	}
	opts := clientOptions(func() {
		s.mu.Lock()
		s.stale = true
		s.mu.Unlock()
		s.m.goRelist(s)
	}, sample)
	client := sdk.NewClient(&sdk.Implementation{Name: "hermes", Version: s.m.opts.Version}, opts)
	root := s.m.opts.Workspace
	var (
		cs  *sdk.ClientSession
		err error
	)
	switch {
	case s.cfg.URL != "":
		addRoot(client, root)
		cs, err = connectHTTP(ctx, client, s.cfg, s.connectTimeout())
	case s.inEnv():
		var t sdk.Transport
		if t, err = boxTransport(ctx, s.m.opts.Backend, s.m.opts.SessionID, s.name, s.cfg); err == nil {
			if env, oerr := s.m.opts.Backend.Open(ctx, s.m.opts.SessionID); oerr == nil {
				root = env.Workdir()
			}
			addRoot(client, root)
			if cs, err = client.Connect(ctx, t, nil); err != nil {
				err = withBoxLog(ctx, s.m.opts.Backend, s.m.opts.SessionID, s.name, err)
			}
		}
		if err != nil {
			err = inBoxHint(s.name, s.cfg, err)
		}
	default:
		addRoot(client, root)
		stderr := &tail{}
		if cs, err = client.Connect(ctx, hostTransport(s.cfg, root, s.m.opts.Environ(), stderr), nil); err != nil {
			time.Sleep(50 * time.Millisecond) // let a crashing server's last words arrive
			err = stderr.explain(err)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	tools, err := s.list(ctx, cs)
	if err != nil {
		cs.Close()
		return nil, nil, err
	}
	return cs, tools, nil
}

// list returns the server's tools (after tools.include/exclude) and its
// resource and prompt utilities.
func (s *server) list(ctx context.Context, cs *sdk.ClientSession) ([]tool.Tool, error) {
	var out []tool.Tool
	if init := cs.InitializeResult(); init != nil {
		out = utilityTools(s, init.Capabilities)
	}
	var skipped []string
	names := map[string]bool{}
	listed := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		if listed++; listed > maxListedTools {
			skipped = append(skipped, fmt.Sprintf("tools past the first %d", maxListedTools))
			break
		}
		if !s.cfg.ToolAllowed(t.Name) {
			continue
		}
		rt := newRemoteTool(s, t)
		switch {
		case len(rt.spec.Parameters) > maxSchemaBytes:
			skipped = append(skipped, fmt.Sprintf("%q (input schema over %d KiB)", truncateName(t.Name), maxSchemaBytes>>10))
		case names[rt.spec.Name]:
			skipped = append(skipped, fmt.Sprintf("%q (same name as another tool once made %s)", truncateName(t.Name), rt.spec.Name))
		default:
			names[rt.spec.Name] = true
			out = append(out, rt)
		}
	}
	if len(skipped) > 0 {
		if len(skipped) > 5 {
			skipped = append(skipped[:5], fmt.Sprintf("%d more", len(skipped)-5))
		}
		s.m.warn(fmt.Sprintf("warning: MCP server %s: left out %s", s.name, strings.Join(skipped, ", ")))
	}
	return out, nil
}

// Bounds of a server's tool listing: every tool's schema and description
// go to the model with each request, so a server cannot fill the context
// (or the provider's limits) with them.
const (
	maxListedTools      = 256
	maxSchemaBytes      = 32 << 10
	maxDescriptionChars = 4000
)

func truncateName(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}

// connected records the outcome of a connect.
func (s *server) connected(cs *sdk.ClientSession, tools []tool.Tool, err error) {
	s.mu.Lock()
	s.connecting = nil
	if err != nil && s.m.closing() {
		s.mu.Unlock()
		return // the session closed while the server was starting
	}
	if errors.Is(err, errDenied) {
		s.lastErr = err
		s.mu.Unlock()
		s.m.warn(fmt.Sprintf("MCP server %s supplied by the client was not allowed: it is not started in this session", s.name))
		return
	}
	if err != nil {
		s.failures++
		s.lastErr = err
		s.retryAt = s.m.opts.Now().Add(backoff(s.failures))
		told := s.reported
		s.reported, s.untold = true, true
		cached := false
		if s.tools == nil {
			// Offer the tools of the last listing: calling one tells
			// the model why the server is unavailable and retries it.
			s.tools = s.loadCache()
			cached = len(s.tools) > 0
		}
		s.mu.Unlock()
		if !told {
			s.m.warn(fmt.Sprintf("warning: MCP server %s failed to start: %s; its tools are unavailable until it starts (retried on next use)", s.name, s.m.redact(s, err.Error())))
		}
		if cached {
			s.m.publish(s)
		} else if s.m.opts.Tools != nil { // a model that knows the tools (a resumed session) is told why
			s.m.opts.Tools.SetUnavailable(toolPrefix(s.name), fmt.Sprintf("MCP server %s could not be started (%s); hermes retries it when the next turn starts",
				s.name, s.m.redact(s, err.Error())))
		}
		return
	}
	if s.m.closing() {
		s.mu.Unlock()
		cs.Close()
		return
	}
	s.cs, s.failures, s.lastErr, s.reported, s.untold = cs, 0, nil, false, false
	s.tools = tools
	if s.m.opts.Tools != nil {
		s.m.opts.Tools.SetUnavailable(toolPrefix(s.name), "")
	}
	stale := s.stale
	s.mu.Unlock()
	s.m.publish(s)
	s.saveCache(tools)
	if stale {
		s.m.goRelist(s) // the list changed while it was first listed
	}
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		err := cs.Wait()
		s.died(cs, err)
	}()
}

// died marks the server down after its connection cs ended (the process
// exited, the HTTP session was lost) and tells stderr once.
func (s *server) died(cs *sdk.ClientSession, err error) {
	s.mu.Lock()
	if s.cs != cs || s.m.closing() {
		s.mu.Unlock()
		return
	}
	s.cs = nil
	if err == nil {
		err = errors.New("the connection closed")
	}
	s.lastErr = fmt.Errorf("it stopped: %w", err)
	s.retryAt = time.Time{} // restart at once on next use; backoff applies to failed starts
	told := s.reported
	s.reported, s.untold = true, true
	s.mu.Unlock()
	_ = cs.Close()
	if !told {
		s.m.warn(fmt.Sprintf("warning: MCP server %s stopped (%s); it is restarted on next use", s.name, s.m.redact(s, err.Error())))
	}
}

func backoff(failures int) time.Duration {
	d := minBackoff
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// session returns the live connection, (re)starting the server when it
// is down and its backoff has passed. The error is for the model.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, error) {
	for attempt := 0; attempt < 2 && !s.m.closing(); attempt++ {
		s.mu.Lock()
		cs, connecting, retryAt, lastErr := s.cs, s.connecting, s.retryAt, s.lastErr
		s.mu.Unlock()
		if cs != nil {
			return cs, nil
		}
		if connecting == nil {
			if wait := retryAt.Sub(s.m.opts.Now()); wait > 0 {
				return nil, fmt.Errorf("MCP server %s is unavailable (%s); hermes retries it in %s", s.name, s.m.redact(s, lastErr.Error()), wait.Round(time.Second))
			}
			if connecting = s.start(); connecting == nil {
				continue // up by now, or the session is closing
			}
		}
		select {
		case <-connecting:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != nil {
		return s.cs, nil
	}
	return nil, fmt.Errorf("MCP server %s could not be started: %s", s.name, s.m.redact(s, errString(s.lastErr)))
}

func errString(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// use runs one call of a tool of the server: approval for an untrusted
// server, a live connection (restarting the server if needed), the call
// under the server's timeout, and redaction of what comes back.
func (s *server) use(ctx context.Context, call tool.Call, toolName, action string, fn func(context.Context, *sdk.ClientSession) tool.Result) tool.Result {
	if s.cfg.Untrusted() {
		if res, ok := s.approve(ctx, call, toolName, action); !ok {
			return res
		}
	}
	s.mu.Lock()
	untold, lastErr := s.untold, s.lastErr
	s.untold = false
	s.mu.Unlock()
	cs, err := s.session(ctx)
	if err != nil {
		return tool.Errorf("%s", s.m.redact(s, err.Error()))
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	res := fn(cctx, cs)
	if res.IsError && s.isDown(cs) {
		res.Content += fmt.Sprintf("\n(MCP server %s stopped during the call; it is restarted on next use)", s.name)
	}
	if untold && lastErr != nil {
		res.Content = fmt.Sprintf("(note: MCP server %s was unavailable: %s; it has been restarted)\n", s.name, lastErr) + res.Content
	}
	// Hermes caps MCP results at 50,000 characters (tool_budget.mcp_result_size_chars).
	res.Content = tool.CapText(s.m.redact(s, res.Content), tool.MaxOutputChars)
	if cctx.Err() != nil && ctx.Err() == nil {
		res = tool.Errorf("MCP server %s did not answer within %s (mcp_servers.%s.timeout)", s.name, s.timeout(), s.name)
	}
	return res
}

func (s *server) isDown(cs *sdk.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs != cs
}

// maxApprovalArgs bounds the arguments shown in an approval prompt, in bytes.
const maxApprovalArgs = 300

// approve asks the approval service before an untrusted server's tool
// runs; ok false carries the denial for the model.
func (s *server) approve(ctx context.Context, call tool.Call, toolName, action string) (tool.Result, bool) {
	if s.m.opts.Approvals == nil {
		return tool.Errorf("MCP server %s is untrusted and this run has no approvals; it was not called", s.name), false
	}
	// Redacted before the cut: a secret across the cut would otherwise
	// show its first part; cut on a rune boundary.
	args := s.m.redact(s, string(call.Args))
	if len(args) > maxApprovalArgs {
		cut := maxApprovalArgs
		for cut > 0 && !utf8.RuneStart(args[cut]) {
			cut--
		}
		args = args[:cut] + "..."
	}
	d, err := s.m.opts.Approvals.Request(ctx, approval.Request{
		SessionID: call.SessionID, Tool: toolName, Action: action + " on untrusted MCP server " + s.name,
		Path: args, Uncontained: !s.inBox(),
	})
	if err != nil {
		return tool.Errorf("approval for %s was not given: %v", toolName, err), false
	}
	if !d.Allowed {
		return tool.Errorf("%s", d.Reason), false
	}
	return tool.Result{}, true
}

// callError turns a failed request into a tool error; a transport
// failure (not an error answered by the server) marks the server down.
func (s *server) callError(err error) tool.Result {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		s.mu.Lock()
		cs := s.cs
		s.mu.Unlock()
		if cs != nil {
			s.died(cs, err)
		}
	}
	return tool.Errorf("MCP server %s: %s", s.name, s.m.redact(s, err.Error()))
}

// relist fetches the tool list again (notifications/tools/list_changed).
func (s *server) relist() {
	s.mu.Lock()
	cs := s.cs
	if cs != nil {
		s.stale = false
	}
	s.mu.Unlock()
	if cs == nil {
		return // connected() relists when it stores the session
	}
	ctx, cancel := context.WithTimeout(s.m.ctx, s.connectTimeout())
	defer cancel()
	tools, err := s.list(ctx, cs)
	if err != nil {
		if s.m.closing() || s.isDown(cs) {
			return
		}
		s.m.warn(fmt.Sprintf("warning: MCP server %s changed its tools but listing them failed: %s", s.name, s.m.redact(s, err.Error())))
		return
	}
	s.mu.Lock()
	if s.cs != cs {
		s.mu.Unlock()
		return
	}
	s.tools = tools
	s.mu.Unlock()
	s.m.publish(s)
	s.saveCache(tools)
}

// close ends the connection.
func (s *server) close() {
	s.mu.Lock()
	cs := s.cs
	s.cs = nil
	s.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: path}).String()
}

// toolNames lists the model-facing names of the server's current tools.
func (s *server) toolNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.Spec().Name)
	}
	return out
}
