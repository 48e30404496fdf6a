package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/cron"
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
	fileOpts := tool.FileToolOptions{Backend: rt.backend, Home: o.UserHome, HermesHome: o.Home, Files: o.Files}
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
		tool.NewCronjob(tool.CronjobOptions{
			Store: cron.NewStore(o.Home, o.Now), Origin: rt.chatOrigin, InCron: rt.isCronSession, Now: o.Now,
		}),
	)
	rt.addBrowserTools(all)
	rt.addWebTools(all)
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
