// Package e2b is the e2b terminal backend (terminal.backend: e2b): each task
// runs in an E2B sandbox, on E2B's cloud (E2B_API_KEY) or on a hermes
// sandbox serve (E2B_API_URL, E2B_SANDBOX_URL). It speaks E2B's REST API
// and envd's Connect protocol with the code generated in
// internal/envd. One sandbox per task, created on the first
// operation and reused; its timeout is extended while in use (never
// shortened); Close kills it, or pauses it when Persistent. A command's
// timeout kills the command, not the sandbox. Provider keys of the agent's
// environment are never sent: only ExecRequest.Env reaches the sandbox.
package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/envd/filesystem/filesystemconnect"
	"github.com/hermes-go/hermes/internal/envd/process/processconnect"
)

// Kind is the terminal.backend name.
const Kind = "e2b"

// Workdir is the sandbox's working directory (E2B's user home).
const Workdir = "/home/user"

// Options configure a Backend.
type Options struct {
	// APIURL is E2B's REST API (E2B_API_URL; default https://api.e2b.app).
	APIURL string
	// SandboxURL is envd for every sandbox (E2B_SANDBOX_URL); "" means
	// https://49983-<sandbox>.<domain> as on E2B's cloud.
	SandboxURL string
	// Domain is E2B's domain for the default URLs (E2B_DOMAIN; e2b.app).
	Domain string
	// APIKey is E2B_API_KEY.
	APIKey string
	// Template is the sandbox template (default "base").
	Template string
	// Timeout is the sandbox's time to live, extended while in use
	// (default 10 minutes).
	Timeout time.Duration
	// Persistent pauses the sandbox on Close instead of killing it
	// (terminal.container_persistent); the next Open of the task connects
	// to it again.
	Persistent bool
	// HTTPClient is the client (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Notice, when set, is told (one line, for the person) when the task's
	// paused sandbox is gone and a new, empty one replaces it.
	Notice func(line string)
}

// FromEnv fills the connection fields of o from getenv (E2B_API_URL,
// E2B_SANDBOX_URL, E2B_API_KEY, E2B_DOMAIN).
func FromEnv(o Options, getenv func(string) string) Options {
	o.APIURL = cmpOr(o.APIURL, getenv("E2B_API_URL"))
	o.SandboxURL = cmpOr(o.SandboxURL, getenv("E2B_SANDBOX_URL"))
	o.APIKey = cmpOr(o.APIKey, getenv("E2B_API_KEY"))
	o.Domain = cmpOr(o.Domain, getenv("E2B_DOMAIN"))
	return o
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Backend hands out one sandbox per task.
type Backend struct {
	o Options

	mu     sync.Mutex
	envs   *backend.TaskEnvs[*env]
	paused map[string]string // task -> sandbox id of a paused sandbox
}

// New returns a Backend; it checks the options, not the network.
func New(o Options) (*Backend, error) {
	if o.APIKey == "" {
		return nil, errors.New("terminal.backend e2b: E2B_API_KEY is not set (the key of E2B's cloud, or one given to hermes sandbox serve --api-key)")
	}
	if o.APIURL == "" {
		o.APIURL = "https://api." + cmpOr(o.Domain, "e2b.app")
	}
	o.APIURL = strings.TrimSuffix(o.APIURL, "/")
	o.SandboxURL = strings.TrimSuffix(o.SandboxURL, "/")
	o.Template = cmpOr(o.Template, "base")
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	return &Backend{o: o, envs: backend.NewTaskEnvs[*env](Kind), paused: map[string]string{}}, nil
}

// Kind returns "e2b".
func (b *Backend) Kind() string { return Kind }

// Isolated reports true: commands run in a sandbox, not on this machine.
func (b *Backend) Isolated() bool { return true }

// Open returns the environment of taskID; its sandbox is created (or a
// paused one connected to) on the first operation.
func (b *Backend) Open(_ context.Context, taskID string) (backend.Environment, error) {
	return b.envs.Open(taskID, func() (*env, error) {
		return &env{b: b, task: taskID, procs: map[*proc]struct{}{}}, nil
	})
}

// Close ends every task's sandbox (killed, or paused when Persistent).
func (b *Backend) Close() error {
	return b.envs.Close()
}

// apiError is E2B's error body.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rest calls E2B's REST API; out may be nil.
func (b *Backend) rest(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.o.APIURL+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", b.o.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.o.HTTPClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("e2b %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		var e apiError
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			return resp.StatusCode, fmt.Errorf("e2b %s %s: %d: %s", method, path, resp.StatusCode, e.Message)
		}
		return resp.StatusCode, fmt.Errorf("e2b %s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("e2b %s %s: answer is not JSON: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// sandboxInfo is E2B's Sandbox answer.
type sandboxInfo struct {
	SandboxID       string  `json:"sandboxID"`
	EnvdAccessToken string  `json:"envdAccessToken"`
	Domain          *string `json:"domain"`
}

// sandboxConn is a created (or connected) sandbox's envd clients.
type sandboxConn struct {
	id, token, envdURL string
	http               *http.Client
	proc               processconnect.ProcessClient
	fs                 filesystemconnect.FilesystemClient
}

// headerTransport adds the sandbox routing and token headers.
type headerTransport struct {
	base      http.RoundTripper
	id, token string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("E2b-Sandbox-Id", h.id)
	r.Header.Set("E2b-Sandbox-Port", "49983")
	if h.token != "" {
		r.Header.Set("X-Access-Token", h.token)
	}
	return h.base.RoundTrip(r)
}

func (b *Backend) connectTo(info sandboxInfo) *sandboxConn {
	url := b.o.SandboxURL
	if url == "" {
		domain := cmpOr(b.o.Domain, "e2b.app")
		if info.Domain != nil && *info.Domain != "" {
			domain = *info.Domain
		}
		url = "https://49983-" + info.SandboxID + "." + domain
	}
	base := b.o.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := &http.Client{Transport: headerTransport{base: base, id: info.SandboxID, token: info.EnvdAccessToken}}
	return &sandboxConn{id: info.SandboxID, token: info.EnvdAccessToken, envdURL: url, http: hc,
		proc: processconnect.NewProcessClient(hc, url, connect.WithProtoJSON()),
		fs:   filesystemconnect.NewFilesystemClient(hc, url, connect.WithProtoJSON())}
}

// findPaused returns the id of a paused sandbox made for task (metadata
// hermes_task), the most recently started first, or "" when there is
// none or the listing fails (a new sandbox is made then).
func (b *Backend) findPaused(ctx context.Context, task string) string {
	q := url.Values{"state": {"paused"}, "metadata": {url.Values{"hermes_task": {task}}.Encode()}}
	var list []struct {
		SandboxID string `json:"sandboxID"`
		StartedAt string `json:"startedAt"`
	}
	if _, err := b.rest(ctx, "GET", "/v2/sandboxes?"+q.Encode(), nil, &list); err != nil || len(list) == 0 {
		return ""
	}
	best := list[0]
	for _, l := range list[1:] {
		if l.StartedAt > best.StartedAt {
			best = l
		}
	}
	return best.SandboxID
}

// create makes the sandbox of a task, or connects to its paused one.
func (b *Backend) create(ctx context.Context, task string) (*sandboxConn, error) {
	secs := int(b.o.Timeout / time.Second)
	b.mu.Lock()
	pausedID := b.paused[task]
	b.mu.Unlock()
	if pausedID == "" && b.o.Persistent {
		// A later hermes run of the task (hermes chat -c) finds the
		// sandbox an earlier run paused by its hermes_task metadata.
		pausedID = b.findPaused(ctx, task)
	}
	var info sandboxInfo
	if pausedID != "" {
		status, err := b.rest(ctx, "POST", "/sandboxes/"+pausedID+"/connect", map[string]int{"timeout": secs}, &info)
		switch {
		case err == nil:
			return b.connectTo(info), nil
		case status != http.StatusNotFound:
			// The sandbox may still exist (a server restarting, a
			// network fault): a fresh one would hide its files.
			return nil, fmt.Errorf("reconnecting to task %s's paused sandbox %s: %w (nothing was created; retry when the server answers)", task, pausedID, err)
		}
		if b.o.Notice != nil {
			b.o.Notice(fmt.Sprintf("the e2b sandbox %s of task %s is gone (the server answered 404); a new, empty sandbox replaces it: files from earlier runs are not in it", pausedID, task))
		}
	}
	if _, err := b.rest(ctx, "POST", "/sandboxes", map[string]any{"templateID": b.o.Template, "timeout": secs,
		"metadata": map[string]string{"hermes_task": task}}, &info); err != nil {
		return nil, err
	}
	if info.SandboxID == "" {
		return nil, errors.New("e2b: the create answer has no sandboxID")
	}
	return b.connectTo(info), nil
}
