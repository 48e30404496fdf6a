package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/browser"
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

// addBrowserTools adds the browser toolset when a Chromium is there to
// drive. Each session gets its own browser on first use; it closes with
// the session (shutdown) or the runtime.
func (rt *Runtime) addBrowserTools(all *tool.Registry) {
	if browser.FindChromium() == "" || rt.backend.Kind() != "local" {
		return
	}
	rt.browsers = browser.NewManager(browser.Options{Workdir: func(string) string { return rt.cwd }})
	rt.closers = append(rt.closers, rt.browsers.Close)
	for _, t := range tool.NewBrowserTools(tool.BrowserOptions{Manager: rt.browsers, Vision: supportsVision(rt.cfg.Model.SupportsVision, rt.cfg.Model.Default)}) {
		all.Add(t)
	}
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
