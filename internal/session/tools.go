package session

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/browser"
	"github.com/hermes-go/hermes/internal/egress"
	"github.com/hermes-go/hermes/internal/memory"
	"github.com/hermes-go/hermes/internal/skills"
	"github.com/hermes-go/hermes/internal/tool"
)

// buildTools builds the tools every session shares. Their per-session
// state (todo lists, background processes, environments) is keyed by the
// session id each call carries.
func (rt *Runtime) buildTools() error {
	c, o := rt.cfg, rt.opts
	rt.memory = memory.NewStore(filepath.Join(o.Home, "memories"), c.Memory.MemoryCharLimit, c.Memory.UserCharLimit, o.Now)
	rt.skills = skills.NewLibrary(skills.Roots(o.Home, c.Skills.ExternalDirs, rt.cwd, o.UserHome)...)
	rt.todo = tool.NewTodoList()
	rt.processes = tool.NewProcessTable()
	secrets := rt.redact.Values()
	fileOpts := tool.FileToolOptions{Backend: rt.backend, Home: o.UserHome, HermesHome: o.Home}
	all := tool.NewRegistry(
		tool.NewTerminalTool(tool.TerminalOptions{
			Backend: rt.backend, Approvals: rt.approvals, OutputDir: filepath.Join(o.Home, "cache", "terminal"),
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
	rt.addBrowserTools(all)
	if enabled(c.Memory.MemoryEnabled) || enabled(c.Memory.UserProfileEnabled) {
		all.Add(tool.NewMemory(rt.memory))
	}
	toolsets := o.Toolsets
	if len(toolsets) == 0 {
		toolsets = c.Toolsets
	}
	unknown, unavailable := all.CheckToolsets(toolsets)
	if len(unknown) > 0 {
		return fmt.Errorf("unknown toolset %s (--toolsets or toolsets: in config.yaml); available: %s",
			strings.Join(unknown, ", "), strings.Join(all.Toolsets(), ", "))
	}
	if len(unavailable) > 0 {
		o.Warn(fmt.Sprintf("warning: toolset %s is not available in this build", strings.Join(unavailable, ", ")))
	}
	rt.tools = all.Filter(toolsets)
	if len(rt.tools.Names()) == 0 {
		o.Warn("warning: no tools are enabled for this run")
	}
	return nil
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
