package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/skills"
)

// skillsListTool is Hermes' `skills_list` tool (toolset skills).
type skillsListTool struct {
	lib *skills.Library
}

// NewSkillsList returns the `skills_list` tool: optional `category`. The
// result is JSON {count, categories, skills: [{name, description,
// category}], problems?: ["<file>: <reason>"]}, skills sorted by category
// then name.
func NewSkillsList(lib *skills.Library) Tool { return &skillsListTool{lib: lib} }

var skillsListSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "category": {"type": "string", "description": "only skills of this category"}
  }
}`)

func (t *skillsListTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        "skills_list",
		Description: "List the installed skills (name, description, category). Load one with skill_view(name).",
		Parameters:  skillsListSchema,
	}
}

func (t *skillsListTool) Toolset() string { return "skills" }
func (t *skillsListTool) Parallel() bool  { return true }

func (t *skillsListTool) Run(_ context.Context, call Call) Result {
	var a struct {
		Category string `json:"category"`
	}
	if err := Decode(call.Args, &a); err != nil {
		return Errorf("%v", err)
	}
	list, diags := t.lib.List(strings.TrimSpace(a.Category))
	type item struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Category    string `json:"category"`
	}
	items := []item{}
	cats := []string{}
	seen := map[string]bool{}
	for _, s := range list {
		c := s.Category
		if c == "" {
			c = skills.DefaultCategory
		}
		items = append(items, item{Name: s.Name, Description: s.Description, Category: c})
		if !seen[c] {
			seen[c] = true
			cats = append(cats, c)
		}
	}
	body := map[string]any{"count": len(items), "categories": cats, "skills": items}
	if len(diags) > 0 {
		var problems []string
		for _, d := range diags {
			problems = append(problems, d.String())
		}
		body["problems"] = problems
	}
	if len(items) == 0 && a.Category != "" {
		body["note"] = fmt.Sprintf("no skills in category %q; call skills_list without category to see all", a.Category)
	}
	return JSON(body)
}
