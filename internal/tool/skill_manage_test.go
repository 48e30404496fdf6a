package tool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSkillManageLifecycle(t *testing.T) {
	lib, base := newSkillsHome(t)
	tl := NewSkillManage(lib)
	if tl.Spec().Name != "skill_manage" || tl.Parallel() {
		t.Fatal("spec")
	}
	md := "---\nname: incident-triage\ndescription: Triage checkout incidents\n---\n# Procedure\n1. Compare error rates by release.\n"
	args, _ := json.Marshal(map[string]string{"action": "create", "name": "incident-triage", "category": "devops", "content": md})
	res, body := runJSON(t, tl, string(args))
	want := filepath.Join(base, "devops", "incident-triage", "SKILL.md")
	if res.IsError || body["path"] != want {
		t.Fatalf("%s", res.Content)
	}
	steps := []struct {
		args    map[string]string
		isError bool
		want    string
	}{
		{map[string]string{"action": "create", "name": "incident-triage", "content": md}, true, "already exists"},
		{map[string]string{"action": "patch", "name": "incident-triage", "old_string": "by release.", "new_string": "by release and endpoint."}, false, "patched"},
		{map[string]string{"action": "patch", "name": "incident-triage", "old_string": "absent", "new_string": "x"}, true, "not found"},
		{map[string]string{"action": "write_file", "name": "incident-triage", "file_path": "references/runbook.md", "file_content": "# Runbook"}, false, "Wrote"},
		{map[string]string{"action": "write_file", "name": "incident-triage", "file_path": "../../evil.md", "file_content": "x"}, true, "leaves the skill folder"},
		{map[string]string{"action": "remove_file", "name": "incident-triage", "file_path": "references/runbook.md"}, false, "Removed"},
		{map[string]string{"action": "edit", "name": "incident-triage", "content": "no frontmatter"}, true, "no YAML frontmatter"},
		{map[string]string{"action": "edit", "name": "incident-triage", "content": strings.Replace(md, "Triage checkout", "Triage all", 1)}, false, "updated"},
		{map[string]string{"action": "fly", "name": "incident-triage"}, true, "unknown action"},
		{map[string]string{"action": "create", "name": "Bad Name", "content": md}, true, "invalid skill name"},
		{map[string]string{"action": "delete", "name": "incident-triage"}, false, "deleted"},
		{map[string]string{"action": "delete", "name": "incident-triage"}, true, "unknown skill"},
	}
	for i, s := range steps {
		b, _ := json.Marshal(s.args)
		res, _ := runJSON(t, tl, string(b))
		if res.IsError != s.isError || !strings.Contains(res.Content, s.want) {
			t.Fatalf("step %d %v: got %v %s", i, s.args, res.IsError, res.Content)
		}
		if i == 1 {
			got, _ := os.ReadFile(want)
			if !strings.Contains(string(got), "by release and endpoint.") {
				t.Fatalf("patch not on disk: %s", got)
			}
		}
	}
	if _, err := os.Stat(filepath.Dir(want)); !os.IsNotExist(err) {
		t.Fatal("delete left the folder")
	}
}
