package session

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/tool"
	"github.com/hermes-go/hermes/internal/web"
)

// addWebTools adds web_extract (fetching from the host, or from inside the
// box with the box backend) and, when a search backend is configured,
// web_search. A backend that cannot be used is a warning, not a failure
// to start: the other tools still work.
func (rt *Runtime) addWebTools(all *tool.Registry) {
	var f web.Fetcher = web.NewHTTPFetcher(rt.cfg.Security.AllowPrivateURLs)
	if rt.backend.Kind() == "box" {
		f = &web.EnvFetcher{Open: rt.backend.Open}
	}
	all.Add(tool.NewWebExtract(f))
	want := rt.cfg.Web.SearchBackend
	if want == "" {
		want = rt.cfg.Web.Backend
	}
	s, err := web.NewSearcher(want, rt.opts.Config.Getenv)
	if err != nil {
		rt.opts.Warn(fmt.Sprintf("warning: %v; web_search is off", err))
		return
	}
	if s != nil {
		all.Add(tool.NewWebSearch(s))
	}
}

// addBrowserTools adds the browser toolset. With the local backend it
// needs a Chromium on the host; with the box backend Chromium runs inside
// the session's box (found there on first use), behind its egress gate.
// Each session gets its own browser on first use; it closes with the
// session (shutdown) or the runtime.
func (rt *Runtime) addBrowserTools(all *tool.Registry) {
	opts := browser.Options{Workdir: func(string) string { return rt.cwd }}
	switch rt.backend.Kind() {
	case "local":
		if browser.FindChromium() == "" {
			return
		}
	case "box":
		opts.Workdir = func(id string) string {
			if env, err := rt.backend.Open(context.Background(), id); err == nil {
				return env.Workdir()
			}
			return ""
		}
		opts.Launch = browser.EnvLaunch(rt.backend.Open, boxChromium)
		opts.Explain = func(ctx context.Context, id, u string) string {
			env, err := rt.backend.Open(ctx, id)
			if err != nil {
				return ""
			}
			return gateRefusal(ctx, env, u)
		}
	default:
		return
	}
	rt.browsers = browser.NewManager(opts)
	rt.closers = append(rt.closers, rt.browsers.Close)
	for _, t := range tool.NewBrowserTools(tool.BrowserOptions{Manager: rt.browsers, Vision: supportsVision(rt.cfg.Model.SupportsVision, rt.cfg.Model.Default)}) {
		all.Add(t)
	}
}

// boxChromium finds Chromium in the box and points it at the box's egress
// gate: the proxy port, and the box CA trusted by its key hash.
func boxChromium(ctx context.Context, env backend.Environment) (string, []string, error) {
	path, err := browser.FindInEnv(ctx, env)
	if err != nil {
		return "", nil, err
	}
	ca, err := env.ReadFile(ctx, egress.CACertPath)
	if err != nil {
		return path, nil, nil // no egress gate: the box has no network
	}
	spki, err := browser.SPKIFlag(ca)
	if err != nil {
		return "", nil, fmt.Errorf("%s in the box: %w", egress.CACertPath, err)
	}
	return path, []string{"--proxy-server=http://127.0.0.1:" + strconv.Itoa(egress.ProxyPort), spki}, nil
}

// gateRefusal asks the box's egress gate, from inside the box, whether it
// refuses a tunnel to the host of u, and returns its one-line reason
// ("hermes egress denied HOST:PORT: ...") or "". Chromium reports a refused
// CONNECT only as ERR_TUNNEL_CONNECTION_FAILED.
func gateRefusal(ctx context.Context, env backend.Environment, u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Hostname() == "" {
		return ""
	}
	port := pu.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
	}
	authority := net.JoinHostPort(pu.Hostname(), port)
	for _, r := range authority {
		if !(r == '.' || r == '-' || r == ':' || r == '[' || r == ']' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return ""
		}
	}
	probe := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' >&3 && timeout 5 head -c 2000 <&3`,
		egress.ProxyPort, authority, authority)
	res, err := env.Exec(ctx, backend.ExecRequest{Command: probe, Timeout: 10 * time.Second})
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(res.Output), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "hermes egress") {
			return line
		}
	}
	return ""
}

// supportsVision is model.supports_vision, or a guess from the model id
// when unset: the families that take images on their chat endpoints.
func supportsVision(set *bool, model string) bool {
	if set != nil {
		return *set
	}
	m := strings.ToLower(model)
	for _, f := range []string{"claude", "gpt-4o", "gpt-4.1", "gpt-5", "gemini", "vision", "-vl", "llava", "pixtral", "grok-4", "qwen2.5-vl", "llama-4"} {
		if strings.Contains(m, f) {
			return true
		}
	}
	return false
}
