package approval

import (
	"slices"
	"testing"
)

// Issue 23: writes into terminal.protected_paths need approval, however
// the command spells them (redirection, tee, cp, mv, install, sed -i,
// git config --file), and so do links that may point out of the workspace
// (ln in every form, cp -s/-rs/--symbolic-link, interpreters calling
// symlink). Ordinary workspace work still runs unasked.
func TestProtectedPathsAndLinksNeedApproval(t *testing.T) {
	s := New(Config{Home: "/home/u", Cwd: "/home/u/project"})
	for cmd, key := range map[string]string{
		`printf '[core]\n\tfsmonitor = "touch /tmp/x"\n' >> .git/config`:    "write to protected path",
		`echo evil > .git/hooks/pre-commit`:                                 "write to protected path",
		`echo evil >| ./.git//hooks/post-checkout`:                          "write to protected path",
		`cat x > /home/u/project/.git/config`:                               "write to protected path",
		`cd sub && echo x > ../.git/config`:                                 "write to protected path",
		`echo x | tee -a .git/config`:                                       "write to protected path",
		`cp hook .git/hooks/pre-commit`:                                     "write to protected path",
		`cp -r hooks/. .git/hooks/`:                                         "write to protected path",
		`mv hook .git/hooks/pre-push`:                                       "write to protected path",
		`mv .git /tmp/old-git`:                                              "write to protected path",
		`install -m 755 hook .git/hooks/pre-commit`:                         "write to protected path",
		`sed -i 's/a/b/' .git/config`:                                       "write to protected path",
		`git config --file .git/config core.fsmonitor x`:                    "write to protected path",
		`git config -f .gitmodules submodule.x.update '!sh'`:                "write to protected path",
		`git config --file=.git/config user.name x`:                         "write to protected path",
		`echo 'export X=1' >> .bashrc`:                                      "write to protected path",
		`echo '{}' > .vscode/tasks.json`:                                    "write to protected path",
		`echo '{}' > .mcp.json`:                                             "write to protected path",
		`echo 'use nix' > .envrc`:                                           "write to protected path",
		`echo x > vendor/lib/.git/config`:                                   "write to protected path",
		`ln -s /home/u/.hermes/.env AGENTS.md`:                              "link out of workspace",
		`ln -s ../../etc/passwd AGENTS.md`:                                  "link out of workspace",
		`ln -sf /etc/passwd CLAUDE.md`:                                      "link out of workspace",
		`ln --symbolic /etc/passwd CLAUDE.md`:                               "link out of workspace",
		`/bin/ln -s /etc/shadow x`:                                          "link out of workspace",
		`\ln -s /etc/shadow x`:                                              "link out of workspace",
		`ln /etc/passwd hard`:                                               "link out of workspace",
		`link /etc/passwd hard`:                                             "link out of workspace",
		`ln -s /proc/self/root/etc/passwd x`:                                "link out of workspace",
		`cp -s /home/u/.hermes/.env AGENTS.md`:                              "link out of workspace",
		`cp -rs /home/u/.hermes skills`:                                     "link out of workspace",
		`cp --symbolic-link /etc/passwd AGENTS.md`:                          "link out of workspace",
		`cp -l /etc/passwd hard`:                                            "link out of workspace",
		`python3 -c 'import os; os.symlink("/etc/passwd", "AGENTS.md")'`:    "link out of workspace",
		`python3 -c 'import pathlib; pathlib.Path("a").symlink_to("/etc")'`: "link out of workspace",
		`node -e 'require("fs").symlinkSync("/etc/passwd", "AGENTS.md")'`:   "link out of workspace",
		`perl -e 'symlink "/etc/passwd", "AGENTS.md"'`:                      "link out of workspace",
		`ruby -e 'File.symlink("/etc/passwd", "AGENTS.md")'`:                "link out of workspace",
	} {
		v := s.Check(cmd)
		if v.Action != Ask || !slices.Contains(v.Keys, key) {
			t.Errorf("%q: want Ask with %q, got %v %v (%s)", cmd, key, v.Action, v.Keys, v.Reason)
		}
	}
	for _, cmd := range []string{
		"git add -A && git commit -m x",
		"git checkout -b feature",
		"cat .git/config",
		"echo x > src/main.go",
		"cp a.txt b.txt",
		"ln -s src/lib.go lib.go",
		"ln -s /home/u/project/src lnk",
		"cp -s /home/u/project/a.txt b.txt",
		"echo x > .git/COMMIT_EDITMSG",
		"echo x > .gitignore",
		"echo x > docs/.bashrc.md",
	} {
		if v := s.Check(cmd); v.Action != Allow {
			t.Errorf("%q: want Allow, got %v %v (%s)", cmd, v.Action, v.Keys, v.Reason)
		}
	}
	// terminal.protected_paths: [] turns the write rule off.
	off := New(Config{Home: "/home/u", Cwd: "/home/u/project", ProtectedPaths: []string{}})
	if v := off.Check("echo x >> .git/config"); v.Action != Allow {
		t.Errorf("with protected_paths [] a write to .git/config asked: %v", v.Keys)
	}
}

// Attacker trial on issue 23: commands that make git read config from a
// place protected_paths does not cover run unasked today: .git/commondir
// (git reads the named directory's config and hooks) and a nested
// repository created from a template that carries its config (the
// classifier asks for `> sub/.git/config` but not for this spelling).
func TestGitConfigElsewhereNeedsApproval(t *testing.T) {
	s := New(Config{Home: "/home/u", Cwd: "/home/u/project"})
	for _, cmd := range []string{
		`echo evil > .git/commondir`,
		`mkdir -p t && printf '[core]\n\tfsmonitor = x\n' > t/config && git init -q --template=t sub`,
		`git clone --template t https://example.com/r.git r`,
		`echo ../../evil > .git/worktrees/w/commondir`,
		`cp x a/b/.git/hooks/pre-commit`,
		`git -c core.worktree=/tmp status`,
	} {
		if v := s.Check(cmd); v.Action != Ask {
			t.Errorf("%q: want Ask, got %v %v (%s)", cmd, v.Action, v.Keys, v.Reason)
		}
	}
}
