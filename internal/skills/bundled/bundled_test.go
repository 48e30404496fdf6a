package bundled

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/skills"
)

func skillPath(home string, s Skill) string {
	return filepath.Join(home, "skills", s.Category, s.Name, "SKILL.md")
}

// TestSeedsANewHomeAndTheLibraryReadsThem: a new HERMES_HOME gets every
// bundled skill, each a valid skill the library lists without problems.
func TestSeedsANewHomeAndTheLibraryReadsThem(t *testing.T) {
	home := t.TempDir()
	rep, err := Sync(home)
	if err != nil {
		t.Fatal(err)
	}
	bundle := Skills()
	if len(bundle) < 4 || len(rep.Installed) != len(bundle) {
		t.Fatalf("installed %v of %d", rep.Installed, len(bundle))
	}
	lib := skills.NewLibrary(skills.Roots(home, nil, "", "")...)
	list, diags := lib.List("")
	if len(diags) != 0 {
		t.Errorf("diagnostics: %+v", diags)
	}
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
		if len(s.Description) > 60 || s.Description == "" {
			t.Errorf("%s: description %q (house rule: at most 60 characters)", s.Name, s.Description)
		}
	}
	for _, want := range []string{"working-in-a-box", "secrets-and-egress", "triaging-logs", "writing-a-skill"} {
		if !slices.Contains(names, want) {
			t.Errorf("missing %s in %v", want, names)
		}
	}
	if rep, err := Sync(home); err != nil || rep.Changed() || len(rep.Kept) != 0 {
		t.Errorf("second sync: %+v %v", rep, err)
	}
}

// TestUpdateKeepsEditedAndDeleted: when the bundle changes, an untouched
// copy is replaced, an edited copy is kept as the person left it, and a
// deleted skill is not brought back.
func TestUpdateKeepsEditedAndDeleted(t *testing.T) {
	home := t.TempDir()
	if _, err := Sync(home); err != nil {
		t.Fatal(err)
	}
	bundle := Skills()
	untouched, edited, deleted := bundle[0], bundle[1], bundle[2]
	// Pretend the installed copies came from an older bundle: the manifest
	// records old hashes and the untouched copy holds the old text.
	old := map[string][]byte{"SKILL.md": []byte("---\nname: " + untouched.Name + "\ndescription: old\n---\nold body\n")}
	if err := os.WriteFile(skillPath(home, untouched), old["SKILL.md"], 0o644); err != nil {
		t.Fatal(err)
	}
	const mine = "---\nname: mine\ndescription: my own edit\n---\nmy body\n"
	if err := os.WriteFile(skillPath(home, edited), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(skillPath(home, deleted))); err != nil {
		t.Fatal(err)
	}
	manifest := untouched.Name + ":" + hashFiles(old) + "\n" + edited.Name + ":" + edited.Hash + "-old\n" + deleted.Name + ":" + deleted.Hash + "-old\n"
	for _, s := range bundle[3:] {
		manifest += s.Name + ":" + s.Hash + "\n"
	}
	if err := os.WriteFile(filepath.Join(home, "skills", Manifest), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Sync(home)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Updated, []string{untouched.Name}) || !slices.Equal(rep.Kept, []string{edited.Name}) || len(rep.Installed) != 0 {
		t.Errorf("report = %+v", rep)
	}
	if b, _ := os.ReadFile(skillPath(home, untouched)); string(b) != string(untouched.Files["SKILL.md"]) {
		t.Errorf("untouched copy not updated:\n%s", b)
	}
	if b, _ := os.ReadFile(skillPath(home, edited)); string(b) != mine {
		t.Errorf("edited copy overwritten:\n%s", b)
	}
	if _, err := os.Stat(skillPath(home, deleted)); !os.IsNotExist(err) {
		t.Errorf("deleted skill came back: %v", err)
	}
}

// TestOptOutAndLinkOut: the .no-bundled-skills marker stops seeding; a
// category folder that is a link out of HERMES_HOME/skills is not written
// through.
func TestOptOutAndLinkOut(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "skills", OptOut), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := Sync(home); err != nil || !rep.OptedOut || rep.Changed() {
		t.Errorf("opt-out: %+v %v", rep, err)
	}

	home = t.TempDir()
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(home, "skills", Skills()[0].Category)); err != nil {
		t.Fatal(err)
	}
	_, err := Sync(home)
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Errorf("wrote through a link out of the skills folder: %v", entries)
	}
	if err == nil || !strings.Contains(err.Error(), "bundled skill") {
		t.Errorf("link out: %v", err)
	}
}
