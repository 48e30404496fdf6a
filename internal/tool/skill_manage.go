package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/skills"
)

// skillManageTool is Hermes' `skill_manage` tool (toolset skills,
// tools/skill_manager_tool.py).
type skillManageTool struct {
	lib *skills.Library
}

// NewSkillManage returns the `skill_manage` tool: `action` create | patch |
// edit | delete | write_file | remove_file with `name` and, by action,
// `content` and `category` (create), `old_string`/`new_string` and optional
// `file_path` (patch), `content` (edit), `file_path` and `file_content`
// (write_file), `file_path` (remove_file). Success is JSON {success,
// message, path}; refusals are error results.
func NewSkillManage(lib *skills.Library) Tool { return &skillManageTool{lib: lib} }

var skillManageSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["create", "patch", "edit", "delete", "write_file", "remove_file"]},
    "name": {"type": "string", "description": "skill name: lowercase letters, digits, hyphens (≤64)"},
    "content": {"type": "string", "description": "whole SKILL.md (create, edit): ---\\nname: <name>\\ndescription: <when to use>\\n---\\n# Title\\n## When to Use\\n## Procedure\\n## Pitfalls\\n## Verification"},
    "category": {"type": "string", "description": "category folder for create (default general)"},
    "old_string": {"type": "string", "description": "patch: exact text to replace (must occur once)"},
    "new_string": {"type": "string", "description": "patch: replacement text"},
    "file_path": {"type": "string", "description": "write_file/remove_file (and optionally patch): path inside the skill, under references/, templates/, scripts/, examples/ or assets/"},
    "file_content": {"type": "string", "description": "write_file: the file's content"}
  },
  "required": ["action", "name"]
}`)

const skillManageDescription = "Create and improve skills (saved procedures reused in later sessions). " +
	"create a skill after a non-trivial multi-step task, one where you recovered from errors, or when the user corrected your approach. " +
	"Prefer patch (exact old_string → new_string) to fix an outdated or wrong skill; edit replaces the whole SKILL.md; " +
	"write_file adds reference material, templates or scripts; delete removes a skill."

func (t *skillManageTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "skill_manage", Description: skillManageDescription, Parameters: skillManageSchema}
}

func (t *skillManageTool) Toolset() string { return "skills" }

// Parallel is false: changes to one skill apply in order.
func (t *skillManageTool) Parallel() bool { return false }

type skillManageArgs struct {
	Action      string `json:"action"`
	Name        string `json:"name"`
	Content     string `json:"content"`
	Category    string `json:"category"`
	OldString   string `json:"old_string"`
	NewString   string `json:"new_string"`
	FilePath    string `json:"file_path"`
	FileContent string `json:"file_content"`
}

func (t *skillManageTool) Run(_ context.Context, call Call) Result {
	var a skillManageArgs
	if err := Decode(call.Args, &a); err != nil {
		return Errorf("%v", err)
	}
	name := strings.TrimSpace(a.Name)
	if name == "" {
		return Errorf("name is required")
	}
	var msg, path string
	var err error
	switch a.Action {
	case "create":
		var s *skills.Skill
		if s, err = t.lib.Create(name, a.Category, a.Content); err == nil {
			msg, path = fmt.Sprintf("Skill %q created.", name), s.Path
		}
	case "patch":
		if err = t.lib.Patch(name, a.FilePath, a.OldString, a.NewString); err == nil {
			msg = fmt.Sprintf("Skill %q patched.", name)
			path = t.skillPath(name)
		}
	case "edit":
		if err = t.lib.Edit(name, a.Content); err == nil {
			msg, path = fmt.Sprintf("Skill %q updated.", name), t.skillPath(name)
		}
	case "delete":
		var s *skills.Skill
		if s, err = t.lib.Delete(name); err == nil {
			msg, path = fmt.Sprintf("Skill %q deleted.", name), s.Dir
		}
	case "write_file":
		if path, err = t.lib.WriteFile(name, a.FilePath, a.FileContent); err == nil {
			msg = fmt.Sprintf("Wrote %s in skill %q.", a.FilePath, name)
		}
	case "remove_file":
		if err = t.lib.RemoveFile(name, a.FilePath); err == nil {
			msg = fmt.Sprintf("Removed %s from skill %q.", a.FilePath, name)
		}
	default:
		return Errorf("unknown action %q: use create, patch, edit, delete, write_file or remove_file", a.Action)
	}
	if err != nil {
		return Errorf("%v", err)
	}
	body := map[string]any{"success": true, "message": msg}
	if path != "" {
		body["path"] = path
	}
	return JSON(body)
}

func (t *skillManageTool) skillPath(name string) string {
	if s, err := t.lib.Get(name); err == nil {
		return s.Path
	}
	return ""
}
