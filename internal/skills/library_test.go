package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSkillFile writes root/rel (creating folders).
func writeSkillFile(t testing.TB, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func skillMD(name, description, body string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\n---\n" + body
}

func names(list []*Skill) string {
	var out []string
	for _, s := range list {
		out = append(out, s.Category+"/"+s.Name)
	}
	return strings.Join(out, " ")
}

// diagFor returns the diagnostic of path whose reason contains reason, else
// the first one of path, else nil.
func diagFor(diags []Diagnostic, path, reason string) *Diagnostic {
	var first *Diagnostic
	for i := range diags {
		if diags[i].Path != path {
			continue
		}
		if reason != "" && strings.Contains(diags[i].Reason, reason) {
			return &diags[i]
		}
		if first == nil {
			first = &diags[i]
		}
	}
	return first
}

// TestMalformedSkillFiles covers each malformed SKILL.md: every one is
// either read correctly or skipped with a diagnostic naming the file, and
// the good skills beside them are still found.
func TestMalformedSkillFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeSkillFile(t, dir, "ops/good/SKILL.md", skillMD("good", "A sound skill", "# Good\n"))
	cases := []struct {
		name, content string
		skipped       bool   // the skill must be skipped
		read          string // else: the description it must be read with
		reason        string // text the diagnostic must contain ("" = no diagnostic)
	}{
		{"no-front", "# Just markdown\nno frontmatter here\n", true, "", "no YAML frontmatter"},
		{"rules-in-body", "---\nname: rules-in-body\ndescription: Has rules\n---\n# Title\n\n---\n\nmore\n---\nend\n", false, "Has rules", ""},
		{"colon", "---\nname: colon\ndescription: Use when: the build fails: badly\nversion: 2\n---\nbody\n", false, "Use when: the build fails: badly", "not valid YAML"},
		{"huge-front", "---\nname: huge-front\ndescription: big\nnotes: " + strings.Repeat("x", 70<<10) + "\n---\nbody\n", true, "", "larger than 64 KiB"},
		{"unclosed", "---\nname: unclosed\ndescription: never closed\n# body\n", true, "", "never closed"},
		{"crlf", "---\r\nname: crlf\r\ndescription: Windows line ends\r\n---\r\n# Body\r\n", false, "Windows line ends", ""},
		{"bom", "\ufeff---\nname: bom\ndescription: Starts with a BOM\n---\nbody\n", false, "Starts with a BOM", ""},
		{"no-desc", "---\nname: no-desc\n---\nbody\n", true, "", "no description"},
		{"bad-name", skillMD("Bad_Name", "upper case", "x"), true, "", "invalid skill name"},
		{"mismatch", skillMD("other-name", "name differs", "x"), false, "name differs", "differs from its folder"},
		{"binary", "---\nname: binary\ndescription: \xff\xfe\n---\n", true, "", "UTF-8"},
		{"empty", "", true, "", "no YAML frontmatter"},
	}
	paths := map[string]string{}
	for _, c := range cases {
		paths[c.name] = writeSkillFile(t, dir, "ops/"+c.name+"/SKILL.md", c.content)
	}
	lib := NewLibrary(Root{Dir: dir, Kind: Local})
	list, diags := lib.Scan()
	byName := map[string]*Skill{}
	for _, s := range list {
		byName[filepath.Base(s.Dir)] = s
	}
	if byName["good"] == nil || diagFor(diags, good, "") != nil {
		t.Fatalf("the good skill must be read without diagnostic: %v", diags)
	}
	for _, c := range cases {
		d := diagFor(diags, paths[c.name], c.reason)
		s := byName[c.name]
		if c.skipped {
			if s != nil || d == nil || !d.Skipped || !strings.Contains(d.Reason, c.reason) {
				t.Errorf("%s: want skipped with %q, got skill=%v diag=%+v", c.name, c.reason, s != nil, d)
			}
			continue
		}
		if s == nil {
			t.Errorf("%s: not read; diag %+v", c.name, d)
			continue
		}
		if s.Description != c.read {
			t.Errorf("%s: description %q, want %q", c.name, s.Description, c.read)
		}
		if c.reason == "" && d != nil {
			t.Errorf("%s: unexpected diagnostic %+v", c.name, d)
		}
		if c.reason != "" && (d == nil || d.Skipped || !strings.Contains(d.Reason, c.reason)) {
			t.Errorf("%s: want warning %q, got %+v", c.name, c.reason, d)
		}
	}
	if !strings.Contains(byName["rules-in-body"].Body, "---\n\nmore\n---\nend") {
		t.Errorf("body rules lost: %q", byName["rules-in-body"].Body)
	}
	if strings.Contains(byName["crlf"].Body, "\r") || byName["crlf"].Name != "crlf" {
		t.Errorf("crlf skill misread: %+v", byName["crlf"])
	}
	if got := lib.Check(); len(got) != len(diags) || len(got) < 9 {
		t.Errorf("Check must list every problem, got %d", len(got))
	}
}

func TestParseKeepsVersionTextAndFields(t *testing.T) {
	res, err := Parse([]byte("---\nname: x\ndescription: \"quoted: fine\"\nversion: 1.0\nplatforms: [linux, macos]\nmetadata:\n  hermes:\n    tags: [a]\n---\nbody"))
	if err != nil {
		t.Fatal(err)
	}
	f := res.Front
	if f.Version != "1.0" || f.Description != "quoted: fine" || strings.Join(f.Platforms, ",") != "linux,macos" || f.Metadata["hermes"] == nil {
		t.Fatalf("front %+v", f)
	}
	if len(res.Warnings) != 0 {
		t.Fatalf("warnings %v", res.Warnings)
	}
}

func TestRootsPrecedenceAndLayout(t *testing.T) {
	home, ext, work := t.TempDir(), t.TempDir(), t.TempDir()
	writeSkillFile(t, filepath.Join(home, "skills"), "devops/shared/SKILL.md", skillMD("shared", "local copy", "x"))
	writeSkillFile(t, ext, "shared/SKILL.md", skillMD("shared", "external copy", "x"))
	writeSkillFile(t, ext, "ext-only/SKILL.md", skillMD("ext-only", "from external dir", "x"))
	writeSkillFile(t, filepath.Join(work, ".hermes", "skills"), "proj/SKILL.md", skillMD("proj", "project skill", "x"))
	writeSkillFile(t, filepath.Join(home, "skills"), ".hub/quarantine/bad/SKILL.md", "junk")
	writeSkillFile(t, filepath.Join(home, "skills"), "devops/dup/SKILL.md", skillMD("dup", "one", "x"))
	writeSkillFile(t, filepath.Join(home, "skills"), "other/dup/SKILL.md", skillMD("dup", "two", "x"))

	roots := Roots(home, []string{ext, "", "~/nowhere"}, work, "/nonexistent-home")
	if len(roots) != 4 || roots[0].Kind != Local || roots[3].Kind != Project {
		t.Fatalf("roots %+v", roots)
	}
	lib := NewLibrary(roots...)
	list, diags := lib.Scan()
	if got := names(list); got != "/ext-only /proj devops/dup devops/shared" {
		t.Fatalf("skills %q", got)
	}
	s, err := lib.Get("shared")
	if err != nil || s.Description != "local copy" {
		t.Fatalf("local must win over external: %+v %v", s, err)
	}
	if len(diags) != 1 || !strings.Contains(diags[0].Reason, "duplicate skill name") {
		t.Fatalf("diags %+v", diags)
	}
}

func TestIndexGroupedSortedAndByteStable(t *testing.T) {
	dir := t.TempDir()
	writeSkillFile(t, dir, "zeta/b-skill/SKILL.md", skillMD("b-skill", "second\n  in zeta", "x"))
	writeSkillFile(t, dir, "zeta/a-skill/SKILL.md", skillMD("a-skill", "first in zeta", "x"))
	writeSkillFile(t, dir, "alpha/c-skill/SKILL.md", skillMD("c-skill", "only alpha", "x"))
	writeSkillFile(t, dir, "loose/SKILL.md", skillMD("loose", "no category", "x"))
	writeSkillFile(t, dir, "alpha/win-only/SKILL.md", "---\nname: win-only\ndescription: windows\nplatforms: [windows]\n---\nx")
	lib := NewLibrary(Root{Dir: dir, Kind: Local})
	idx := lib.Index()
	want := "<available_skills>\nalpha:\n- c-skill: only alpha\ngeneral:\n- loose: no category\nzeta:\n- a-skill: first in zeta\n- b-skill: second in zeta\n</available_skills>"
	if !strings.HasPrefix(idx, "## Skills\n") || !strings.HasSuffix(idx, want) {
		t.Fatalf("index:\n%s", idx)
	}
	// Touching files (new mtimes, directory order) must not change a byte.
	writeSkillFile(t, dir, "alpha/c-skill/SKILL.md", skillMD("c-skill", "only alpha", "x"))
	for range 3 {
		if again := lib.Index(); again != idx {
			t.Fatal("index not byte-stable")
		}
	}
	if NewLibrary(Root{Dir: filepath.Join(dir, "missing")}).Index() != "" {
		t.Fatal("no skills → empty index")
	}
}

func TestLoadPreloadsInOrderAndNamesUnknown(t *testing.T) {
	dir := t.TempDir()
	writeSkillFile(t, dir, "ops/incident-triage/SKILL.md", skillMD("incident-triage", "triage incidents", "# Triage\n1. compare error rates\n"))
	writeSkillFile(t, dir, "ops/deploy/SKILL.md", skillMD("deploy", "deploy", "# Deploy\n"))
	lib := NewLibrary(Root{Dir: dir, Kind: Local})
	got, err := lib.Load([]string{"incident-triage", " deploy", "incident-triage"})
	if err != nil || names(got) != "ops/incident-triage ops/deploy" {
		t.Fatalf("%v %v", names(got), err)
	}
	if !strings.Contains(got[0].Raw, "1. compare error rates") || !strings.HasPrefix(got[0].Raw, "---\nname: incident-triage") {
		t.Fatalf("raw %q", got[0].Raw)
	}
	text := FormatPreload(got)
	if !strings.Contains(text, `"incident-triage" skill is loaded`) || !strings.Contains(text, "# Deploy") {
		t.Fatalf("preload %q", text)
	}
	_, err = lib.Load([]string{"deploy", "nope"})
	var unknown *UnknownSkillError
	if !errors.As(err, &unknown) || err.Error() != `unknown skill "nope"; available skills: deploy, incident-triage` {
		t.Fatalf("err %v", err)
	}
}

func TestSkillFilesAndReadFileConfinement(t *testing.T) {
	dir := t.TempDir()
	outside := writeSkillFile(t, t.TempDir(), "secret.txt", "top secret")
	writeSkillFile(t, dir, "ops/s/SKILL.md", skillMD("s", "d", "x"))
	writeSkillFile(t, dir, "ops/s/references/guide.md", "the guide")
	writeSkillFile(t, dir, "ops/s/assets/logo.bin", "\x00\x01\x02")
	if err := os.Symlink(outside, filepath.Join(dir, "ops/s/references/leak.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "ops/s/escape")); err != nil {
		t.Fatal(err)
	}
	s, err := NewLibrary(Root{Dir: dir, Kind: Local}).Get("s")
	if err != nil {
		t.Fatal(err)
	}
	files, err := s.Files()
	if err != nil || strings.Join(files, ",") != "assets/logo.bin,escape,references/guide.md,references/leak.txt" {
		t.Fatalf("files %q %v", files, err)
	}
	if got, err := s.ReadFile("references/guide.md"); err != nil || got != "the guide" {
		t.Fatalf("%q %v", got, err)
	}
	for _, p := range []string{"../../../etc/passwd", "/etc/passwd", "references/../../x", "references/leak.txt", "escape/secret.txt", "assets/logo.bin", "", "references"} {
		if got, err := s.ReadFile(p); err == nil || strings.Contains(got, "secret") {
			t.Errorf("ReadFile(%q) = %q, %v; want refused", p, got, err)
		}
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "incident-triage", "k8s-2", strings.Repeat("a", 64)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A", "-x", "x-", "a--b", "a_b", "a b", "a/b", "..", strings.Repeat("a", 65), "é"} {
		if ValidateName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
