package protect

import "testing"

func TestMatch(t *testing.T) {
	s := New(Defaults())
	for _, c := range []struct {
		rel       string
		ancestors bool
		want      string
	}{
		{".git/config", false, ".git/config"},
		{".git/hooks/pre-commit", false, ".git/hooks/"},
		{".git/hooks", false, ".git/hooks/"},
		{"./.git//info/exclude", false, ".git/info/"},
		{".bashrc", false, ".bashrc"},
		{".vscode/tasks.json", false, ".vscode/"},
		{".hermes/skills/x/SKILL.md", false, ".hermes/"},
		{".git", true, ".git/config"},
		{".git", false, ""},
		{".git/objects/ab", false, ""},
		{".git/config.lock", false, ""},
		{"src/.bashrc", false, ""},
		{"README.md", false, ""},
		{"../.bashrc", false, ""},
	} {
		got, _ := s.Match(c.rel, c.ancestors)
		if got != c.want {
			t.Errorf("Match(%q, %v) = %q, want %q", c.rel, c.ancestors, got, c.want)
		}
	}
	if got, ok := s.MatchAbs("/w", "/w/.git/hooks/post-checkout", false); !ok || got != ".git/hooks/" {
		t.Errorf("MatchAbs = %q %v", got, ok)
	}
	if _, ok := s.MatchAbs("/w", "/other/.bashrc", false); ok {
		t.Error("a path outside the workspace matched")
	}
}

func TestValidate(t *testing.T) {
	for _, bad := range []string{"", "/", "/etc/passwd", "~/.bashrc", "../x", "a/../b", "a//b", "./a", "a\nb"} {
		if Validate(bad) == nil {
			t.Errorf("Validate(%q) accepted it", bad)
		}
	}
	for _, good := range Defaults() {
		if err := Validate(good); err != nil {
			t.Errorf("Validate(%q): %v", good, err)
		}
	}
	if got := New([]string{"/abs", ".ok"}).Paths(); len(got) != 1 || got[0] != ".ok" {
		t.Errorf("New kept %v", got)
	}
}
