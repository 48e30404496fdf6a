package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const plantedSecret = "sk-live-SKILL-PLANTED-5150"

// projectWorld is a HERMES_HOME with secrets, a directory outside the
// workspace holding a skill that leaks one, and a workspace.
type projectWorld struct{ home, ws, outside, dotenv, secrets string }

func newProjectWorld(t *testing.T) projectWorld {
	t.Helper()
	dir := t.TempDir()
	w := projectWorld{home: filepath.Join(dir, "hermes-home"), ws: filepath.Join(dir, "work"), outside: filepath.Join(dir, "outside")}
	w.dotenv = writeSkillFile(t, w.home, ".env", skillMD("leak", "KEY="+plantedSecret, "body"))
	w.secrets = writeSkillFile(t, w.home, "secrets/secrets.json", skillMD("leak", "KEY="+plantedSecret, "body"))
	writeSkillFile(t, w.outside, "leak/SKILL.md", skillMD("leak", "KEY="+plantedSecret, "body"))
	writeSkillFile(t, w.outside, "leak/notes.md", plantedSecret)
	if err := os.MkdirAll(filepath.Join(w.ws, ".hermes", "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w projectWorld) library() *Library { return NewLibrary(Roots(w.home, nil, w.ws, "")...) }

func (w projectWorld) skills() string { return filepath.Join(w.ws, ".hermes", "skills") }

// assertNoLeak scans the library and checks the planted secret is nowhere
// in the index and a refusal naming want is among the diagnostics.
func assertNoLeak(t *testing.T, lib *Library, want string) {
	t.Helper()
	if idx := lib.Index(); strings.Contains(idx, plantedSecret) {
		t.Fatalf("the secret reached the skills index:\n%s", idx)
	}
	if s, err := lib.Get("leak"); err == nil {
		if body, _ := s.ReadFile("notes.md"); strings.Contains(body, plantedSecret) {
			t.Fatal("the secret was read through the skill's ReadFile")
		}
		t.Fatalf("the leaking skill was loaded from %s", s.Dir)
	}
	var all []string
	for _, d := range lib.Check() {
		all = append(all, d.String())
		if strings.Contains(d.String(), want) && d.Skipped {
			return
		}
	}
	t.Errorf("no skipped diagnostic containing %q in %q", want, all)
}

// TestProjectSkillFolderLinkedOutOfTheWorkspaceIsRefused: a box or a
// command links a project skill folder (or .hermes/skills itself) to a
// directory outside the workspace; the skill is not loaded.
func TestProjectSkillFolderLinkedOutOfTheWorkspaceIsRefused(t *testing.T) {
	cases := map[string]func(w projectWorld) error{
		"absolute": func(w projectWorld) error {
			return os.Symlink(filepath.Join(w.outside, "leak"), filepath.Join(w.skills(), "leak"))
		},
		"relative": func(w projectWorld) error {
			return os.Symlink("../../../outside/leak", filepath.Join(w.skills(), "leak"))
		},
		"proc": func(w projectWorld) error {
			return os.Symlink("/proc/self/root"+filepath.Join(w.outside, "leak"), filepath.Join(w.skills(), "leak"))
		},
		"category": func(w projectWorld) error {
			return os.Symlink(w.outside, filepath.Join(w.skills(), "cat"))
		},
		"skills dir": func(w projectWorld) error {
			if err := os.Remove(w.skills()); err != nil {
				return err
			}
			return os.Symlink(w.outside, w.skills())
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			w := newProjectWorld(t)
			if err := plant(w); err != nil {
				t.Fatal(err)
			}
			assertNoLeak(t, w.library(), "symbolic link to a path outside the workspace")
		})
	}
}

// TestProjectSkillMdLinkedToHermesSecretsIsRefused: SKILL.md itself is a
// symbolic or hard link to HERMES_HOME/.env or secrets/secrets.json.
func TestProjectSkillMdLinkedToHermesSecretsIsRefused(t *testing.T) {
	for _, variant := range []string{"symlink", "hardlink"} {
		for _, target := range []string{"dotenv", "secrets"} {
			t.Run(variant+"/"+target, func(t *testing.T) {
				w := newProjectWorld(t)
				dst := w.dotenv
				if target == "secrets" {
					dst = w.secrets
				}
				md := filepath.Join(w.skills(), "leak", FileName)
				if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
					t.Fatal(err)
				}
				link, want := os.Symlink, "symbolic link to a path outside the workspace"
				if variant == "hardlink" {
					link, want = os.Link, "one of hermes' protected files in HERMES_HOME"
				}
				if err := link(dst, md); err != nil {
					t.Fatal(err)
				}
				assertNoLeak(t, w.library(), want)
			})
		}
	}
}

// TestProjectSkillReadFileRefusesHardLinksAndFIFOs: a file of a sound
// project skill that is a hard link to HERMES_HOME's secrets, or a FIFO,
// is refused in one line without a hang.
func TestProjectSkillReadFileRefusesHardLinksAndFIFOs(t *testing.T) {
	w := newProjectWorld(t)
	writeSkillFile(t, w.skills(), "ok/SKILL.md", skillMD("ok", "fine", "body"))
	if err := os.Link(w.secrets, filepath.Join(w.skills(), "ok", "ref.md")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(w.skills(), "ok", "pipe.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := w.library().Get("ok")
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"ref.md":  `"ref.md" in skill "ok" is one of hermes' protected files in HERMES_HOME`,
		"pipe.md": `"pipe.md" in skill "ok" is a named pipe (FIFO), not a regular file`,
	} {
		done := make(chan struct{})
		var body string
		var err error
		go func() { body, err = s.ReadFile(file); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("ReadFile(%s) hangs", file)
		}
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(body, plantedSecret) {
			t.Errorf("ReadFile(%s) = %q, %v; want a refusal %q", file, body, err, want)
		}
	}
	files, err := s.Files()
	if err != nil || strings.Join(files, ",") != "pipe.md,ref.md" {
		t.Errorf("Files() = %q, %v", files, err)
	}
}

// TestProjectSkillLinkedInsideTheWorkspaceLoads: a skill folder linked to
// another folder of the project still loads.
func TestProjectSkillLinkedInsideTheWorkspaceLoads(t *testing.T) {
	w := newProjectWorld(t)
	writeSkillFile(t, w.ws, "tools/deploy/SKILL.md", skillMD("deploy", "deploys", "body"))
	writeSkillFile(t, w.ws, "tools/deploy/notes.md", "notes")
	if err := os.Symlink("../../tools/deploy", filepath.Join(w.skills(), "deploy")); err != nil {
		t.Fatal(err)
	}
	s, err := w.library().Get("deploy")
	if err != nil {
		t.Fatal(err)
	}
	if body, err := s.ReadFile("notes.md"); err != nil || body != "notes" {
		t.Errorf("ReadFile = %q, %v", body, err)
	}
}
