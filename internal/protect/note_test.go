package protect_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/protect"
)

// TestFailureNoteNamesEntryAndCopyableFix: a failed `git config` in a box
// names .git/config (not all 15 defaults) and the fix command, pasted into
// `hermes config set`, leaves every other default protected.
func TestFailureNoteNamesEntryAndCopyableFix(t *testing.T) {
	set := protect.New(protect.Defaults())
	note := set.FailureNote(4, "error: could not lock config file .git/config: Read-only file system\n")
	if !strings.HasPrefix(note, "writes to .git/config fail") || strings.Contains(note, "[...]") || strings.Contains(note, ".bashrc, ") {
		t.Fatalf("note = %q", note)
	}
	const lead = "hermes config set terminal.protected_paths '"
	i := strings.Index(note, lead)
	if i < 0 {
		t.Fatalf("no copyable fix in %q", note)
	}
	value := note[i+len(lead):]
	value = value[:strings.Index(value, "'")]
	home := t.TempDir()
	if err := config.Set(home, "terminal.protected_paths", value); err != nil {
		t.Fatalf("config set %s: %v", value, err)
	}
	l, err := config.Load(home, config.LoadOptions{Getenv: os.Getenv})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(protect.Defaults(), func(p string) bool { return p == ".git/config" })
	if !slices.Equal(l.Config.Terminal.ProtectedPaths, want) {
		t.Fatalf("after the fix protected_paths = %v, want %v", l.Config.Terminal.ProtectedPaths, want)
	}
	if !strings.Contains(note, "'[]'") {
		t.Errorf("note does not say how to turn protection off: %q", note)
	}
}

func TestFailureNoteWhenItApplies(t *testing.T) {
	set := protect.New(protect.Defaults())
	cases := []struct {
		code    int
		out     string
		want    string // "" = no note
		notWant string
	}{
		{0, ".git/config: Read-only file system", "", ""},
		{1, "make: *** [all] Error 2", "", ""},
		{1, "mv: cannot move '.git' to 'x': Device or resource busy", "protected path", ""},
		{1, "sed: couldn't open /work/.bash_profile.tmp: Read-only file system", "writes to .bash_profile fail", ".profile,"},
		{1, "cp: cannot create regular file 'x.profile': Permission denied", "", ""},
	}
	for _, c := range cases {
		got := set.FailureNote(c.code, c.out)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) || c.notWant != "" && strings.Contains(got, c.notWant) {
			t.Errorf("FailureNote(%d, %q) = %q, want it to contain %q", c.code, c.out, got, c.want)
		}
	}
	if n := protect.New(nil).FailureNote(1, "Read-only file system"); n != "" {
		t.Errorf("empty set gave a note: %q", n)
	}
}

// The file tools' refusal names the entry and the copyable fix without it.
func TestEntryHintNamesEntry(t *testing.T) {
	set := protect.New([]string{".git/hooks/", ".envrc"})
	h := set.EntryHint(".envrc")
	if !strings.Contains(h, "edit .envrc on the host") || !strings.Contains(h, `terminal.protected_paths '[".git/hooks/"]'`) {
		t.Errorf("EntryHint = %q", h)
	}
}
