// Package prompt assembles the system prompt and loads project context,
// following Hermes "prompt-assembly.md": identity (SOUL.md or the built-in
// one), tool-use guidance, the optional agent.system_prompt, frozen memory
// and user-profile blocks, the skills index, project context, a date line
// and a platform hint. It also exports the prompt-injection scanner (Scan)
// that memory and skills reuse.
package prompt

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DefaultIdentity is the identity used when HERMES_HOME/SOUL.md is absent,
// empty or ignored.
const DefaultIdentity = "You are Hermes Agent, an AI agent that works in the user's terminal through tools: " +
	"you read and change files, run commands and look things up to get the user's task done. " +
	"Be direct and match the length of your answer to the question. When you finish a piece of work, " +
	"say briefly what changed, what you verified and what is left. Say plainly when you are unsure, " +
	"and do not claim to have done or checked anything you did not."

// cliPlatformHint is the platform hint for the terminal (Hermes
// PLATFORM_HINTS["cli"] wording starts the same way).
const cliPlatformHint = "You are a CLI AI Agent. Your output is shown in a terminal: " +
	"prefer plain text and short lists over heavy markdown, and put commands and paths in backticks."

// Options are the inputs of Build. Equal options (and equal files on disk)
// give byte-identical prompts, so a provider's prompt cache stays warm.
type Options struct {
	// Home is HERMES_HOME; SOUL.md there replaces the built-in identity.
	Home string
	// Cwd is the working directory where project context files are looked
	// up ("" = no project context).
	Cwd string
	// IgnoreRules (--ignore-rules, --safe-mode) skips SOUL.md, project
	// context, the memory and user blocks and preloaded skills.
	IgnoreRules bool
	// ToolNames are the tools offered this session; guidance is only given
	// for tools in this list.
	ToolNames []string
	// SystemPrompt is agent.system_prompt from config ("" = none).
	SystemPrompt string
	// MemoryBlock and UserBlock are the frozen MEMORY and USER snapshots,
	// rendered by the memory package ("" = none).
	MemoryBlock string
	UserBlock   string
	// SkillsIndex is the rendered index of available skills ("" = none).
	SkillsIndex string
	// PreloadedSkills is the rendered text of skills preloaded with
	// --skills ("" = none).
	PreloadedSkills string
	// ContextMaxChars caps SOUL.md and the context file, in characters
	// (0 = DefaultContextMaxChars).
	ContextMaxChars int
	// Now is the session start from the injected clock; only the date
	// (in Now's location) is written, so the prompt is stable for the day.
	// The zero time leaves the date line out.
	Now time.Time
	// SessionID is written when PassSessionID is set (--pass-session-id).
	SessionID     string
	PassSessionID bool
	// Platform selects the platform hint: "" or "cli".
	Platform string
}

// Result is an assembled system prompt with what went into it.
type Result struct {
	// Text is the system prompt.
	Text string
	// SoulPath is the SOUL.md used ("" = built-in identity).
	SoulPath string
	// Context is the project context file used (nil = none).
	Context *ContextFile
	// Findings are the injection patterns blocked in SOUL.md and the
	// context file, each prefixed by the file in Detail.
	Findings []Finding
	// Warnings are files that could not be read; the prompt is built
	// without them.
	Warnings []string
}

// Build returns the system prompt for opts; see Assemble.
func Build(opts Options) string { return Assemble(opts).Text }

// Assemble builds the system prompt in Hermes order: 1 identity (SOUL.md
// if present and not ignored, else DefaultIdentity), 2 tool-use guidance
// for the tools present, 3 agent.system_prompt, 4 the memory block, 5 the
// user-profile block, 6 the skills index and preloaded skills, 7 "# Project
// Context", 8 the date line (and session id), 9 the platform hint. Empty
// parts are left out; parts are separated by one blank line.
func Assemble(opts Options) Result {
	var res Result
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}

	identity := DefaultIdentity
	if !opts.IgnoreRules && opts.Home != "" {
		soulPath := filepath.Join(opts.Home, "SOUL.md")
		soul, err := loadSoul(soulPath, opts.ContextMaxChars)
		switch {
		case err != nil:
			res.Warnings = append(res.Warnings, err.Error())
		case soul != nil && soul.Content != "":
			identity = soul.Content
			res.SoulPath = soulPath
			res.Findings = append(res.Findings, prefixed(soul.Name, soul.Findings)...)
		}
	}
	add(identity)
	add(toolGuidance(opts.ToolNames))
	add(opts.SystemPrompt)
	if !opts.IgnoreRules {
		add(opts.MemoryBlock)
		add(opts.UserBlock)
	}
	add(opts.SkillsIndex)
	if !opts.IgnoreRules {
		add(opts.PreloadedSkills)
	}
	if !opts.IgnoreRules && opts.Cwd != "" {
		cf, refused, err := LoadContextFile(opts.Cwd, opts.Home, opts.ContextMaxChars)
		res.Warnings = append(res.Warnings, refused...)
		if err != nil {
			res.Warnings = append(res.Warnings, err.Error())
		}
		if cf != nil && cf.Content != "" {
			res.Context = cf
			res.Findings = append(res.Findings, prefixed(cf.Name, cf.Findings)...)
			add("# Project Context\n\nThe following project context file was loaded; follow its instructions " +
				"where they apply to the task.\n\n## " + cf.Name + "\n\n" + cf.Content)
		}
	}
	var when []string
	if !opts.Now.IsZero() {
		when = append(when, "Current date: "+opts.Now.Format("Monday, January 2, 2006")+".")
	}
	if opts.PassSessionID && opts.SessionID != "" {
		when = append(when, "Session ID: "+opts.SessionID)
	}
	add(strings.Join(when, "\n"))
	add(platformHint(opts.Platform))
	res.Text = strings.Join(parts, "\n\n")
	return res
}

// toolGuidance says how to use the learning-loop tools that are present.
func toolGuidance(tools []string) string {
	has := func(name string) bool { return slices.Contains(tools, name) }
	var lines []string
	if has("memory") {
		lines = append(lines, "You have persistent memory across sessions (the memory tool). Save facts that matter in "+
			"every session, such as who the user is, their environment and standing preferences, as short "+
			"declarative statements; replace stale entries when it is full. Task procedures belong in skills, not memory.")
	}
	if has("session_search") {
		lines = append(lines, "When the user refers to an earlier conversation, search for it with session_search "+
			"before asking them to repeat themselves.")
	}
	var skillTools []string
	for _, t := range []string{"skills_list", "skill_view", "skill_manage"} {
		if has(t) {
			skillTools = append(skillTools, t)
		}
	}
	if len(skillTools) > 0 {
		s := "Skills hold reusable procedures."
		if has("skill_view") {
			s += " Before a task that matches a skill, load it with skill_view and follow it."
		} else if has("skills_list") {
			s += " Use skills_list to see which skills exist."
		}
		if has("skill_manage") {
			s += " After you work out a non-trivial procedure or hit a pitfall, record it with skill_manage."
		}
		lines = append(lines, s)
	}
	if has("todo") {
		lines = append(lines, "For work with several steps, keep a task list with the todo tool and update it as you go.")
	}
	return strings.Join(lines, "\n")
}

func platformHint(platform string) string {
	switch platform {
	case "", "cli":
		return cliPlatformHint
	}
	return ""
}

func prefixed(name string, fs []Finding) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		f.Detail = fmt.Sprintf("%s:%d: %s", name, f.Line, f.Detail)
		out[i] = f
	}
	return out
}
