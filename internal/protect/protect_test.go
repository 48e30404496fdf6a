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

// A nested repository's .git/config, hooks, info and commondir make the
// user's `git status` at the top run code as much as the workspace's own
// (attack23 F1/F2); other entries hold only at the workspace root.
func TestGitEntriesHoldInNestedRepositories(t *testing.T) {
	s := New(Defaults())
	for _, rel := range []string{"sub/.git/config", "a/b/.git/hooks/pre-commit", "x/.git/info/attributes", ".git/commondir", "v/.git/commondir", ".git/worktrees/w/commondir", "v/.git/worktrees/w/config.worktree"} {
		if _, ok := s.Match(rel, false); !ok {
			t.Errorf("%s is not protected", rel)
		}
	}
	if _, ok := s.Match("sub/.git", true); !ok {
		t.Errorf("renaming a nested .git away is not protected")
	}
	for _, rel := range []string{"sub/.git/objects/ab/cd", "sub/.bashrc", "sub/.hermes/x", "a.git/config", "sub/x.git/config"} {
		if e, ok := s.Match(rel, false); ok {
			t.Errorf("%s matched %s", rel, e)
		}
	}
}
