package session

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/cron"
	"github.com/hermes-go/hermes/internal/memory"
	"github.com/hermes-go/hermes/internal/protect"
	"github.com/hermes-go/hermes/internal/skills"
	"github.com/hermes-go/hermes/internal/skills/bundled"
	"github.com/hermes-go/hermes/internal/tool"
)

// buildTools builds the tools every session shares. Their per-session
// state (todo lists, background processes, environments) is keyed by the
// session id each call carries.
func (rt *Runtime) buildTools() error {
	c, o := rt.cfg, rt.opts
	rt.memory = memory.NewStore(filepath.Join(o.Home, "memories"), c.Memory.MemoryCharLimit, c.Memory.UserCharLimit, o.Now)
	// Seed or refresh the skills bundled with this binary (cheap when the
	// manifest is current; edited copies are kept). A failure leaves the
	// skills as they were: the run goes on.
	_, _ = bundled.Sync(o.Home)
	rt.skills = skills.NewLibrary(skills.Roots(o.Home, c.Skills.ExternalDirs, rt.cwd, o.UserHome)...)
	rt.todo = tool.NewTodoList()
	rt.processes = tool.NewProcessTable()
	secrets := rt.redact.Values()
	protected := protect.New(c.Terminal.ProtectedPaths)
	fileOpts := tool.FileToolOptions{Backend: rt.backend, Home: o.UserHome, HermesHome: o.Home, Files: o.Files,
		Protected: protected, Approvals: rt.approvals}
	all := newRegistry(toolDeps{
		terminal: tool.TerminalOptions{
			Backend: rt.backend, Approvals: rt.approvals, OutputDir: filepath.Join(o.Home, "cache", "terminal"),
			Timeout: time.Duration(c.Terminal.Timeout) * time.Second, Secrets: secrets, Processes: rt.processes,
			Charset: rt.localeCharset(), Protected: protected,
		},
		files: fileOpts, secrets: secrets, rt: rt, cron: cron.NewStore(o.Home, o.Now),
		memory: enabled(c.Memory.MemoryEnabled) || enabled(c.Memory.UserProfileEnabled),
		code:   c.CodeExecution,
	})
	rt.addBrowserTools(all)
	rt.addSendMessage(all)
	rt.addWebTools(all)
	toolsets := rt.toolsetsFor(o.Platform)
	if err := CheckToolsetKeys(all, c); err != nil {
		return err
	}
	unknown, unavailable := all.CheckToolsets(toolsets)
	if len(unknown) > 0 {
		return fmt.Errorf("unknown toolset %s (--toolsets or toolsets: in config.yaml); available: %s",
			strings.Join(unknown, ", "), strings.Join(all.Toolsets(), ", "))
	}
	if len(unavailable) > 0 {
		o.Warn(fmt.Sprintf("warning: toolset %s is not available in this build", strings.Join(unavailable, ", ")))
	}
	rt.allTools = all
	rt.tools = rt.toolsFor(o.Platform)
	if !mcpSelected(toolsets, c.MCPServers, o.Warn) && len(rt.tools.Names()) == 0 {
		o.Warn("warning: no tools are enabled for this run")
	}
	return nil
}

// mcpSelected reports whether toolsets select tools of an enabled server
// of mcp_servers (`mcp`, `mcp-<server>`: they join when the servers
// connect), and warns about an `mcp-<server>` naming no enabled server.
func mcpSelected(toolsets []string, servers map[string]config.MCPServer, warn func(string)) bool {
	selected := false
	for _, ts := range toolsets {
		ts = strings.TrimSpace(ts)
		name, ok := strings.CutPrefix(ts, "mcp-")
		srv, found := servers[name]
		switch {
		case ts == "mcp":
			selected = selected || len(servers) > 0
		case !ok:
		case !found:
			warn(fmt.Sprintf("warning: toolset %s names no server of mcp_servers in config.yaml (see `hermes mcp list`)", ts))
		case !srv.IsEnabled():
			warn(fmt.Sprintf("warning: toolset %s: mcp_servers.%s has enabled: false", ts, name))
		default:
			selected = true
		}
	}
	return selected
}

// toolDeps are what the built-in tools are built with.
type toolDeps struct {
	terminal tool.TerminalOptions
	files    tool.FileToolOptions
	secrets  []string
	rt       *Runtime
	cron     *cron.Store
	memory   bool
	code     config.CodeExecutionConfig
}

// newRegistry builds every built-in tool.
func newRegistry(d toolDeps) *tool.Registry {
	rt := d.rt
	rt.codeOpts = tool.ExecuteCodeOptions{
		Backend: rt.backend, Approvals: rt.approvals, Tools: rt.sessionTools, Redact: rt.redact.Redact,
		Timeout: time.Duration(d.code.Timeout) * time.Second, MaxToolCalls: d.code.MaxToolCalls,
	}
	all := tool.NewRegistry(
		tool.NewTerminalTool(d.terminal),
		tool.NewProcessTool(rt.processes, d.secrets, rt.approvals),
		tool.NewReadFileTool(d.files),
		tool.NewWriteFileTool(d.files),
		tool.NewPatchTool(d.files),
		tool.NewSearchFilesTool(d.files),
		tool.NewSessionSearch(rt.store),
		tool.NewSkillsList(rt.skills),
		tool.NewSkillView(rt.skills),
		tool.NewSkillManage(rt.skills),
		rt.todo,
		tool.NewClarify(tool.AskerFunc(rt.ask)),
		&delegateTool{rt: rt, depth: 1},
		tool.NewExecuteCode(rt.codeOpts),
		tool.NewCronjob(tool.CronjobOptions{
			Store: d.cron, Origin: rt.chatOrigin, InCron: rt.isCronSession, Now: rt.opts.Now,
		}),
	)
	if d.memory {
		all.Add(tool.NewMemory(rt.memory))
	}
	return all
}

// sessionTools is the registry of the open session id (nil when it is
// not open): the tools an execute_code script of it may call.
func (rt *Runtime) sessionTools(id string) *tool.Registry {
	if s := rt.lookup(id); s != nil {
		return s.tools
	}
	return nil
}

// Toolsets lists the toolsets of the built-in tools (for `hermes setup
// tools`), sorted: the tools are built without an environment and never
// run; browser, vision and web, added per backend and config, are always listed.
func Toolsets() []string {
	rt := &Runtime{todo: tool.NewTodoList(), processes: tool.NewProcessTable(), opts: Options{Now: time.Now}}
	all := newRegistry(toolDeps{rt: rt, memory: true, cron: cron.NewStore("", time.Now)})
	out := all.Toolsets()
	for _, ts := range []string{"browser", "vision", "web"} {
		if !slices.Contains(out, ts) {
			out = append(out, ts)
		}
	}
	slices.Sort(out)
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

// localeCharset is the charset of the locale commands run in: the host's
// (LANG/LC_ALL of hermes's environment) for the local backend, "" (UTF-8)
// for the others, whose images use C.UTF-8.
func (rt *Runtime) localeCharset() string {
	if rt.backend == nil || rt.backend.Kind() != "local" {
		return ""
	}
	env := map[string]string{}
	for _, kv := range rt.opts.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return tool.LocaleCharset(func(k string) string { return env[k] })
}

// ToolsetPlatforms are the platform keys of platform_toolsets (Hermes's
// names; each is the Platform of its sessions).
var ToolsetPlatforms = []string{"cli", "acp", "api_server", "telegram", "discord", "slack", "cron"}

// toolsetsFor is the toolset list of a platform's sessions: --toolsets,
// else platform_toolsets.<platform>, else toolsets (empty = all).
func (rt *Runtime) toolsetsFor(platform string) []string {
	if platform == "" {
		platform = rt.opts.Platform
	}
	if len(rt.opts.Toolsets) > 0 {
		return rt.opts.Toolsets
	}
	if ts, ok := rt.cfg.PlatformToolsets[platform]; ok && len(ts) > 0 {
		return ts
	}
	return rt.cfg.Toolsets
}

// toolsFor is the tool registry of a platform's sessions: the toolsets of
// toolsetsFor, without agent.disabled_toolsets (subtracted last, as in
// Hermes Agent).
func (rt *Runtime) toolsFor(platform string) *tool.Registry {
	if rt.allTools == nil {
		return rt.tools
	}
	return rt.allTools.Filter(rt.toolsetsFor(platform)).Without(rt.cfg.Agent.DisabledToolsets)
}

// CheckToolsetKeys refuses platform_toolsets keys that name no platform
// and toolsets of platform_toolsets or agent.disabled_toolsets that name
// no toolset or tool of all, naming the key and the fix.
func CheckToolsetKeys(all *tool.Registry, c *config.Config) error {
	for _, p := range slices.Sorted(maps.Keys(c.PlatformToolsets)) {
		if !slices.Contains(ToolsetPlatforms, p) {
			return fmt.Errorf("platform_toolsets.%s: unknown platform %q; use one of %s", p, p, strings.Join(ToolsetPlatforms, ", "))
		}
		if unknown, _ := all.CheckToolsets(c.PlatformToolsets[p]); len(unknown) > 0 {
			return fmt.Errorf("platform_toolsets.%s: unknown toolset %s; available: %s", p, strings.Join(unknown, ", "), strings.Join(all.Toolsets(), ", "))
		}
	}
	if unknown, _ := all.CheckToolsets(c.Agent.DisabledToolsets); len(unknown) > 0 {
		return fmt.Errorf("agent.disabled_toolsets: unknown toolset %s; available: %s", strings.Join(unknown, ", "), strings.Join(all.Toolsets(), ", "))
	}
	return nil
}
