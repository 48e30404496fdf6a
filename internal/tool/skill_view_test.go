package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSkillViewLevels(t *testing.T) {
	lib, base := newSkillsHome(t)
	md := "---\nname: incident-triage\ndescription: triage incidents\n---\n# Triage\n"
	putSkill(t, base, "devops/incident-triage/SKILL.md", md)
	putSkill(t, base, "devops/incident-triage/references/runbook.md", "compare error rates")
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("SECRET"), 0o600)
	os.Symlink(secret, filepath.Join(base, "devops/incident-triage/references/leak.md"))
	tl := NewSkillView(lib)

	res, body := runJSON(t, tl, `{"name":"incident-triage"}`)
	if res.IsError || body["content"] != md || body["category"] != "devops" {
		t.Fatalf("%s", res.Content)
	}
	if files, _ := body["files"].([]any); len(files) != 2 || files[1] != "references/runbook.md" {
		t.Fatalf("files %v", body["files"])
	}
	_, body = runJSON(t, tl, `{"name":"incident-triage","path":"references/runbook.md"}`)
	if body["content"] != "compare error rates" {
		t.Fatalf("%v", body)
	}
	for _, args := range []string{
		`{"name":"incident-triage","path":"../../../../etc/passwd"}`,
		`{"name":"incident-triage","path":"/etc/passwd"}`,
		`{"name":"incident-triage","path":"references/leak.md"}`,
		`{"name":"incident-triage","path":"references/none.md"}`,
		`{"name":"nope"}`,
	} {
		res, _ := runJSON(t, tl, args)
		if !res.IsError || strings.Contains(res.Content, "SECRET") || strings.Contains(res.Content, "root:") {
			t.Errorf("%s: %v %s", args, res.IsError, res.Content)
		}
	}
	res, _ = runJSON(t, tl, `{"name":"nope"}`)
	if !strings.Contains(res.Content, "available skills: incident-triage") {
		t.Fatalf("unknown skill error should list skills: %s", res.Content)
	}
}
