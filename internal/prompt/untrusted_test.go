package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const planted = "sk-live-PLANTED-SECRET-9911"

// attackWorld is a HERMES_HOME holding secrets and a workspace beside it.
type attackWorld struct{ home, ws, secrets, dotenv string }

func newAttackWorld(t *testing.T) attackWorld {
	t.Helper()
	dir := t.TempDir()
	w := attackWorld{home: filepath.Join(dir, "hermes-home"), ws: filepath.Join(dir, "work")}
	w.secrets = filepath.Join(w.home, "secrets", "secrets.json")
	w.dotenv = filepath.Join(w.home, ".env")
	write(t, w.secrets, `{"GITHUB_TOKEN":"`+planted+`"}`)
	write(t, w.dotenv, "OPENROUTER_API_KEY="+planted+"\n")
	if err := os.MkdirAll(w.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// plant makes name in the workspace lead to target by one of the attack's
// link variants.
func (w attackWorld) plant(t *testing.T, variant, name, target string) {
	t.Helper()
	link := filepath.Join(w.ws, name)
	var err error
	switch variant {
	case "absolute":
		err = os.Symlink(target, link)
	case "relative":
		rel, _ := filepath.Rel(w.ws, target)
		err = os.Symlink(rel, link)
	case "proc":
		err = os.Symlink("/proc/self/root"+target, link)
	case "dirlink":
		if _, serr := os.Lstat(filepath.Join(w.ws, "cfg")); serr != nil {
			err = os.Symlink(w.home, filepath.Join(w.ws, "cfg"))
		}
		if err == nil {
			rel, _ := filepath.Rel(w.home, target)
			err = os.Symlink(filepath.Join("cfg", rel), link)
		}
	case "hardlink":
		err = os.Link(target, link)
	default:
		t.Fatalf("unknown variant %s", variant)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestContextFileLinksToHermesSecretsNeverReachThePrompt is issue 23's
// attack: a command writes `ln -sf $HERMES_HOME/secrets/secrets.json
// AGENTS.md` (or .env, any context file name, any link spelling); the next
// system prompt holds no secret and the person is told, once, why the file
// was not loaded.
func TestContextFileLinksToHermesSecretsNeverReachThePrompt(t *testing.T) {
	for _, name := range append(append([]string{}, contextNamesUp...), contextNamesHere...) {
		for _, variant := range []string{"absolute", "relative", "proc", "dirlink", "hardlink"} {
			for _, target := range []string{"secrets", "dotenv"} {
				t.Run(name+"/"+variant+"/"+target, func(t *testing.T) {
					w := newAttackWorld(t)
					dst := w.secrets
					if target == "dotenv" {
						dst = w.dotenv
					}
					w.plant(t, variant, name, dst)
					res := Assemble(Options{Home: w.home, Cwd: w.ws})
					if strings.Contains(res.Text, planted) {
						t.Fatalf("the secret reached the system prompt")
					}
					if res.Context != nil {
						t.Errorf("a context file was loaded: %s", res.Context.Path)
					}
					want := name + " is a symbolic link to a path outside the workspace; not loaded"
					if variant == "hardlink" {
						want = name + " is one of hermes' protected files in HERMES_HOME"
					}
					if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], want) || strings.Contains(res.Warnings[0], planted) {
						t.Errorf("warnings = %q, want one line containing %q", res.Warnings, want)
					}
				})
			}
		}
	}
}

// TestRefusedContextFileFallsThroughToTheNextName: a refused AGENTS.md
// does not hide a sound CLAUDE.md.
func TestRefusedContextFileFallsThroughToTheNextName(t *testing.T) {
	w := newAttackWorld(t)
	w.plant(t, "absolute", "AGENTS.md", w.dotenv)
	write(t, filepath.Join(w.ws, "CLAUDE.md"), "rule-marker-77")
	res := Assemble(Options{Home: w.home, Cwd: w.ws})
	if res.Context == nil || res.Context.Name != "CLAUDE.md" || !strings.Contains(res.Text, "rule-marker-77") {
		t.Fatalf("CLAUDE.md not loaded after a refused AGENTS.md: %+v", res.Context)
	}
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], "AGENTS.md is a symbolic link") {
		t.Errorf("warnings = %q", res.Warnings)
	}
}

// TestContextFileLinksInsideTheWorkspaceStillLoad: a link to another file
// of the project is fine.
func TestContextFileLinksInsideTheWorkspaceStillLoad(t *testing.T) {
	w := newAttackWorld(t)
	write(t, filepath.Join(w.ws, "docs", "agents.md"), "rule-marker-88")
	if err := os.Symlink("docs/agents.md", filepath.Join(w.ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	res := Assemble(Options{Home: w.home, Cwd: w.ws})
	if !strings.Contains(res.Text, "rule-marker-88") || len(res.Warnings) != 0 {
		t.Fatalf("a link inside the workspace was not loaded: warnings %q", res.Warnings)
	}
}

// TestParentHermesMdLinkOutIsRefused: .hermes.md in the git root above
// cwd is read beneath its own directory too.
func TestParentHermesMdLinkOutIsRefused(t *testing.T) {
	w := newAttackWorld(t)
	sub := filepath.Join(w.ws, "pkg")
	if err := os.MkdirAll(filepath.Join(w.ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	w.plant(t, "absolute", ".hermes.md", w.secrets)
	res := Assemble(Options{Home: w.home, Cwd: sub})
	if strings.Contains(res.Text, planted) {
		t.Fatal("the secret reached the system prompt")
	}
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], "../.hermes.md is a symbolic link to a path outside the workspace") {
		t.Errorf("warnings = %q", res.Warnings)
	}
}

// TestBadContextFilesAreRefusedInOneLine: FIFOs (no hang), sockets,
// directories, a 1 GiB sparse file and control characters in a name.
func TestBadContextFilesAreRefusedInOneLine(t *testing.T) {
	cases := map[string]struct {
		make func(t *testing.T, ws string)
		want string
	}{
		"fifo": {func(t *testing.T, ws string) {
			if err := unix.Mkfifo(filepath.Join(ws, "AGENTS.md"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "AGENTS.md is a named pipe (FIFO), not a regular file; not loaded"},
		"directory": {func(t *testing.T, ws string) {
			if err := os.Mkdir(filepath.Join(ws, "AGENTS.md"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "AGENTS.md is a directory, not a file; not loaded"},
		"1GiB": {func(t *testing.T, ws string) {
			if err := os.WriteFile(filepath.Join(ws, "CLAUDE.md"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(filepath.Join(ws, "CLAUDE.md"), 1<<30); err != nil {
				t.Fatal(err)
			}
		}, "CLAUDE.md is 1073741824 bytes, over the 1048576-byte limit; not loaded"},
		"proc fd": {func(t *testing.T, ws string) {
			if err := os.Symlink("/proc/self/fd/0", filepath.Join(ws, ".cursorrules")); err != nil {
				t.Fatal(err)
			}
		}, ".cursorrules is a symbolic link to a path outside the workspace; not loaded"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			w := newAttackWorld(t)
			c.make(t, w.ws)
			res := Assemble(Options{Home: w.home, Cwd: w.ws})
			if len(res.Warnings) != 1 || res.Warnings[0] != c.want {
				t.Errorf("warnings = %q, want [%q]", res.Warnings, c.want)
			}
		})
	}
}

// TestSoulMdIsBounded: HERMES_HOME/SOUL.md is the user's, but a FIFO or a
// 1 GiB file there is refused, not read.
func TestSoulMdIsBounded(t *testing.T) {
	w := newAttackWorld(t)
	soul := filepath.Join(w.home, "SOUL.md")
	if err := unix.Mkfifo(soul, 0o644); err != nil {
		t.Fatal(err)
	}
	res := Assemble(Options{Home: w.home})
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "SOUL.md is a named pipe") || res.SoulPath != "" {
		t.Errorf("FIFO SOUL.md: warnings %q soul %q", res.Warnings, res.SoulPath)
	}
	os.Remove(soul)
	if err := os.WriteFile(soul, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(soul, 1<<30); err != nil {
		t.Fatal(err)
	}
	res = Assemble(Options{Home: w.home})
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "over the 1048576-byte limit") || !strings.Contains(res.Text, DefaultIdentity) {
		t.Errorf("1 GiB SOUL.md: warnings %q", res.Warnings)
	}
}
