package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/secret"
)

// hostEnvKeys are the variables of hermes' own environment a stdio server
// on the host inherits (Hermes' MCP credential filtering): enough to find
// programs and write temp files, never a provider key. The server's env:
// entries are added on top.
var hostEnvKeys = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM"}

// serverEnv builds a host stdio server's environment from hermes' own
// environ and the configured env.
func serverEnv(environ []string, extra map[string]string) []string {
	m := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		keep := strings.HasPrefix(k, "LC_") || strings.HasPrefix(k, "XDG_")
		for _, h := range hostEnvKeys {
			keep = keep || k == h
		}
		if keep {
			m[k] = v
		}
	}
	for k, v := range extra {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// hostTransport starts a stdio server as a host process; the end of its
// stderr is kept in stderr (for start errors). The server leads its own
// process group: the terminal's Ctrl-C (which cancels a turn) does not
// kill it, and the processes it started (a browser, a language server)
// are killed with it when its connection closes.
func hostTransport(c config.MCPServer, dir string, environ []string, stderr *tail) sdk.Transport {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = serverEnv(environ, c.Env)
	cmd.Dir = dir
	cmd.Stderr = stderr
	// Out of the terminal's group it no longer gets the SIGHUP of a closed
	// terminal: it gets SIGKILL when hermes dies (as local commands do).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A helper that escaped the group and keeps stderr open must not
	// hold Wait (and the connection's Close) forever.
	cmd.WaitDelay = terminateAfter
	return groupTransport{&sdk.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}}
}

// groupTransport is a CommandTransport whose connection, once closed
// (stdin closed, the server exited or was killed), kills what is left of
// the server's process group.
type groupTransport struct{ *sdk.CommandTransport }

// Connect starts the server.
func (t groupTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.CommandTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &groupConn{Connection: conn, pgid: t.Command.Process.Pid}, nil
}

type groupConn struct {
	sdk.Connection
	pgid int
}

func (c *groupConn) Close() error {
	err := c.Connection.Close()
	_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
	return err
}

// terminateAfter is how long a host server may take to exit after its
// stdin closes before it gets SIGTERM (the SDK's default, 5 s, held up
// every exit of hermes with server-everything, which ignores EOF).
const terminateAfter = time.Second

// tailSize is how much of a server's stderr is kept.
const tailSize = 600

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

// explain adds the stderr tail to a start error.
func (t *tail) explain(err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := strings.TrimSpace(string(t.buf)); s != "" {
		return fmt.Errorf("%w; its stderr ends: %s", err, s)
	}
	return err
}

// errSecretInBox is returned for a box-run server whose env holds a
// credential: the model's commands share the box and could read it.
type errSecretInBox struct{ server, key string }

func (e errSecretInBox) Error() string {
	return fmt.Sprintf("mcp_servers.%s.env.%s holds a secret, and the server runs inside the box where the model's commands could read it: "+
		"store it with `hermes secrets set %s --hosts HOST` and remove it from env (the box gets a placeholder in $%s that the egress gate swaps for the value), "+
		"or set mcp_servers.%s.host: true to run the server on the host", e.server, e.key, e.key, e.key, e.server)
}

// boxTransport starts a stdio server inside the session's environment
// (the box, or the local backend's guard) through the backend's process API: stdin and stdout are the
// protocol, stderr goes to /tmp/hermes-mcp-<name>.log in the box.
func boxTransport(ctx context.Context, b backend.Backend, sessionID, name string, c config.MCPServer) (sdk.Transport, error) {
	for k := range c.Env {
		// In a box the egress gate can swap a placeholder in; the local
		// backend has no gate, so there the env is the server's own.
		if secret.IsName(k) && b.Kind() == "box" {
			return nil, errSecretInBox{server: name, key: k}
		}
	}
	env, err := b.Open(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	words := []string{c.Command}
	words = append(words, c.Args...)
	var line strings.Builder
	line.WriteString("exec")
	for _, w := range words {
		q, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			return nil, fmt.Errorf("mcp_servers.%s: argument %q cannot be passed to a shell: %v", name, w, err)
		}
		line.WriteString(" " + q)
	}
	line.WriteString(" 2>>" + boxLog(name))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	proc, err := env.Start(context.WithoutCancel(ctx), backend.ExecRequest{
		Command: line.String(), Env: c.Env, Stdin: inR, Output: outW, DiscardOutput: true,
	})
	if err != nil {
		inW.Close()
		outW.Close()
		return nil, err
	}
	go func() {
		_, _ = proc.Wait(context.Background())
		outW.CloseWithError(io.EOF)
	}()
	return &sdk.IOTransport{Reader: outR, Writer: &procWriter{w: inW, proc: proc}}, nil
}

// inBoxHint adds to the start error of a box-run stdio server that it ran
// inside the box, where a host path or program may not exist ("No such
// file or directory" said nothing of where), and how to run it on the host.
func inBoxHint(name string, c config.MCPServer, err error) error {
	return fmt.Errorf("%w (stdio MCP servers run inside the box with terminal.backend: box, so %q must exist there; "+
		"to run it on the host instead: `hermes mcp add %s --host -- COMMAND ARGS...` or mcp_servers.%s.host: true)",
		err, c.Command, name, name)
}

// boxLog is where a box-run server's stderr goes, inside the box.
func boxLog(name string) string { return "/tmp/hermes-mcp-" + sanitize(name) + ".log" }

// withBoxLog adds the end of a box-run server's stderr to err.
func withBoxLog(ctx context.Context, b backend.Backend, sessionID, name string, err error) error {
	env, oerr := b.Open(ctx, sessionID)
	if oerr != nil {
		return err
	}
	data, rerr := env.ReadFile(context.WithoutCancel(ctx), boxLog(name))
	if rerr != nil || len(strings.TrimSpace(string(data))) == 0 {
		return err
	}
	if len(data) > tailSize {
		data = data[len(data)-tailSize:]
	}
	return fmt.Errorf("%w; its stderr (%s in the box) ends: %s", err, boxLog(name), strings.TrimSpace(string(data)))
}

// procWriter is the stdin of a box process; closing it ends the process.
type procWriter struct {
	w    *io.PipeWriter
	proc backend.Process
	once sync.Once
}

func (p *procWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

func (p *procWriter) Close() error {
	p.once.Do(func() {
		p.w.Close()
		_ = p.proc.Kill()
	})
	return nil
}

// headerTransport adds fixed headers to every request to the configured
// server's host: they are its credentials, and a redirect (or an SSE
// endpoint event) naming another host does not get them.
type headerTransport struct {
	base    http.RoundTripper
	host    *url.URL // the configured url:
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.ownHost(r.URL) {
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	// The SDK reads a JSON answer whole (io.ReadAll): bound it as the
	// stdio transport bounds a line. An event stream is long-lived; the
	// SDK bounds each of its events.
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxHTTPAnswer}
	}
	return resp, nil
}

// ownHost reports whether u is on the configured server's host and port,
// or the same host name over https (an upgrade).
func (h headerTransport) ownHost(u *url.URL) bool {
	if h.host == nil {
		return false
	}
	return strings.EqualFold(u.Host, h.host.Host) ||
		u.Scheme == "https" && strings.EqualFold(u.Hostname(), h.host.Hostname())
}

// maxHTTPAnswer is the largest JSON answer read from an HTTP server, in
// bytes (the SDK's bound on a stdio message).
const maxHTTPAnswer = sdk.DefaultMaxLineLength

// boundedBody fails a read past left bytes.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the answer is over %d MiB: not read", maxHTTPAnswer>>20)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// httpClient returns the client of an HTTP server entry: its headers on
// every request, and answers' headers awaited at most headerTimeout (0 =
// as long as the request's context allows).
func httpClient(c config.MCPServer, headerTimeout time.Duration) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.ResponseHeaderTimeout = headerTimeout
	host, _ := url.Parse(c.URL)
	return &http.Client{Transport: headerTransport{base: base, host: host, headers: c.Headers}}
}

// detached connects its transport with a context that outlives the
// connect: the SSE transport ties its event stream to the context its
// Connect gets, and connect's context ends with connect_timeout. The
// stream ends when the session is closed.
type detached struct{ sdk.Transport }

func (d detached) Connect(ctx context.Context) (sdk.Connection, error) {
	return d.Transport.Connect(context.WithoutCancel(ctx))
}

// connectHTTP connects over streamable HTTP and, when the endpoint does
// not speak it (a 4xx answer to the initialize POST), over the older SSE
// transport.
func connectHTTP(ctx context.Context, client *sdk.Client, c config.MCPServer, connectTimeout time.Duration) (*sdk.ClientSession, error) {
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: httpClient(c, 0), MaxRetries: -1}, nil)
	if err == nil {
		return cs, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	// The SSE stream outlives connect's context; its headers must come
	// within connect_timeout.
	sse := &sdk.SSEClientTransport{Endpoint: c.URL, HTTPClient: httpClient(c, connectTimeout)}
	cs, sseErr := client.Connect(ctx, detached{sse}, nil)
	if sseErr == nil {
		return cs, nil
	}
	return nil, errors.Join(fmt.Errorf("streamable HTTP: %w", err), fmt.Errorf("SSE: %w", sseErr))
}
