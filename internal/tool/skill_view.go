package tool

import (
	"context"
	"encoding/json"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/skills"
)

// skillViewTool is Hermes' `skill_view` tool (toolset skills): progressive
// disclosure level 1 (SKILL.md + file list) and level 2 (one file).
type skillViewTool struct {
	lib *skills.Library
}

// NewSkillView returns the `skill_view` tool: `name`, optional `path` of a
// file inside the skill. Without path the result is JSON {name,
// description, category, dir, content (the whole SKILL.md), files}; with
// path it is {name, path, content}. Unknown skills, paths leaving the skill
// folder, binary or missing files are error results.
func NewSkillView(lib *skills.Library) Tool { return &skillViewTool{lib: lib} }

var skillViewSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "skill name"},
    "path": {"type": "string", "description": "optional file inside the skill folder, e.g. references/guide.md"}
  },
  "required": ["name"]
}`)

func (t *skillViewTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        "skill_view",
		Description: "Load a skill: returns its SKILL.md instructions and the list of its files; with path, returns that file (references/, templates/, scripts/, assets/).",
		Parameters:  skillViewSchema,
	}
}

func (t *skillViewTool) Toolset() string { return "skills" }
func (t *skillViewTool) Parallel() bool  { return true }

func (t *skillViewTool) Run(_ context.Context, call Call) Result {
	var a struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	if err := Decode(call.Args, &a); err != nil {
		return Errorf("%v", err)
	}
	s, err := t.lib.Get(a.Name)
	if err != nil {
		return Errorf("%v", err)
	}
	if a.Path != "" && a.Path != skills.FileName {
		content, err := s.ReadFile(a.Path)
		if err != nil {
			return Errorf("%v", err)
		}
		return JSON(map[string]any{"name": s.Name, "path": a.Path, "content": content})
	}
	files, err := s.Files()
	if err != nil {
		return Errorf("listing files of skill %q: %v", s.Name, err)
	}
	if files == nil {
		files = []string{}
	}
	return JSON(map[string]any{
		"name": s.Name, "description": s.Description, "category": s.Category,
		"dir": s.Dir, "content": s.Raw, "files": files,
	})
}
