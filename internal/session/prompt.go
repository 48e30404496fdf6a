package session

import (
	"fmt"

	"github.com/hermes-go/hermes/internal/memory"
	"github.com/hermes-go/hermes/internal/prompt"
)

// buildSystemPrompt assembles a session's system prompt once: identity,
// guidance, frozen memory snapshots, the skills index and project context.
func (rt *Runtime) buildSystemPrompt(sessionID, platform string) string {
	c := rt.cfg
	var memBlock, userBlock string
	if !rt.opts.IgnoreRules {
		if enabled(c.Memory.MemoryEnabled) {
			memBlock, _ = rt.memory.Snapshot(memory.TargetMemory)
		}
		if enabled(c.Memory.UserProfileEnabled) {
			userBlock, _ = rt.memory.Snapshot(memory.TargetUser)
		}
	}
	if platform == "" {
		platform = rt.opts.Platform
	}
	res := prompt.Assemble(prompt.Options{
		Home: rt.opts.Home, Cwd: rt.cwd, IgnoreRules: rt.opts.IgnoreRules, ToolNames: rt.toolsFor(platform).Names(),
		SystemPrompt: c.Agent.SystemPrompt, MemoryBlock: memBlock, UserBlock: userBlock,
		SkillsIndex: rt.skills.Index(), ContextMaxChars: c.ContextFileMaxChars,
		Now: rt.opts.Now(), SessionID: sessionID, Platform: platform,
	})
	for _, w := range res.Warnings {
		rt.opts.Warn("warning: " + w)
	}
	for _, f := range res.Findings {
		// Detail starts with "FILE:LINE:", so the person knows which file to fix.
		rt.opts.Warn(fmt.Sprintf("blocked suspicious text in project context (%s): %s", f.Kind, f.Detail))
	}
	return res.Text
}
