package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/skills"
)

// newSkillsHome returns a library over a fresh HERMES_HOME and its skills dir.
func newSkillsHome(t *testing.T) (*skills.Library, string) {
	t.Helper()
	home := t.TempDir()
	return skills.NewLibrary(skills.Roots(home, nil, "", "")...), filepath.Join(home, "skills")
}

func putSkill(t *testing.T, base, rel, content string) {
	t.Helper()
	p := filepath.Join(base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runJSON(t *testing.T, tl Tool, args string) (Result, map[string]any) {
	t.Helper()
	res := tl.Run(context.Background(), Call{ID: "c", Args: json.RawMessage(args)})
	var body map[string]any
	if !res.IsError {
		if err := json.Unmarshal([]byte(res.Content), &body); err != nil {
			t.Fatalf("not JSON: %s", res.Content)
		}
	}
	return res, body
}

func TestSkillsListByCategoryWithProblems(t *testing.T) {
	lib, base := newSkillsHome(t)
	putSkill(t, base, "devops/incident-triage/SKILL.md", "---\nname: incident-triage\ndescription: triage incidents\n---\nx")
	putSkill(t, base, "writing/changelog/SKILL.md", "---\nname: changelog\ndescription: write changelogs\n---\nx")
	putSkill(t, base, "writing/broken/SKILL.md", "no frontmatter")
	tl := NewSkillsList(lib)
	if tl.Spec().Name != "skills_list" || tl.Toolset() != "skills" {
		t.Fatal("spec")
	}
	res, body := runJSON(t, tl, `{}`)
	if res.IsError || body["count"] != 2.0 || !strings.Contains(res.Content, `"devops"`) {
		t.Fatalf("%s", res.Content)
	}
	if p, _ := body["problems"].([]any); len(p) != 1 || !strings.Contains(p[0].(string), "broken/SKILL.md: no YAML frontmatter") {
		t.Fatalf("problems %v", body["problems"])
	}
	res, body = runJSON(t, tl, `{"category":"writing"}`)
	if body["count"] != 1.0 || !strings.Contains(res.Content, "changelog") || strings.Contains(res.Content, "incident-triage") {
		t.Fatalf("%s", res.Content)
	}
	_, body = runJSON(t, tl, `{"category":"none"}`)
	if body["count"] != 0.0 || body["note"] == nil {
		t.Fatalf("%v", body)
	}
}
