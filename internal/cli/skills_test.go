package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// skillsTestApp is an App on a fresh HERMES_HOME with captured output.
func skillsTestApp(t *testing.T, stdin string) (*App, *bytes.Buffer, *bytes.Buffer, string) {
	t.Helper()
	home := t.TempDir()
	env := map[string]string{"HERMES_HOME": home, "HOME": t.TempDir()}
	var out, errOut bytes.Buffer
	app := &App{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv:  func(k string) string { return env[k] },
		Environ: func() []string { return nil },
		Now:     func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) },
	}
	return app, &out, &errOut, home
}

func TestSkillsCreateListShowDelete(t *testing.T) {
	app, out, errOut, home := skillsTestApp(t, "")
	// This test is about the person's own skills: no bundled ones.
	if err := os.MkdirAll(filepath.Join(home, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "skills", ".no-bundled-skills"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) int {
		out.Reset()
		errOut.Reset()
		return app.Run(context.Background(), args)
	}
	if code := run("skills", "create", "incident-triage", "--category", "devops", "--description", "Triage incidents: compare error rates"); code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	path := filepath.Join(home, "skills", "devops", "incident-triage", "SKILL.md")
	if !strings.Contains(out.String(), path) {
		t.Fatalf("create output %q", out)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `description: "Triage incidents: compare error rates"`) || !strings.Contains(string(b), "## Procedure") {
		t.Fatalf("template:\n%s", b)
	}
	// Regression: the refusal suggested the agent's "patch or edit" actions;
	// a person gets the CLI's way and the file to edit.
	if code := run("skills", "create", "incident-triage", "--description", "again"); code != 1 || !strings.Contains(errOut.String(), "already exists") ||
		!strings.Contains(errOut.String(), "hermes skills delete incident-triage") || !strings.Contains(errOut.String(), path) ||
		strings.Contains(errOut.String(), "patch or edit") {
		t.Fatalf("duplicate create: %d %s", code, errOut)
	}
	if code := run("skills", "create", "Bad", "--description", "x"); code != 1 || !strings.Contains(errOut.String(), "invalid skill name") {
		t.Fatalf("bad name: %d %s", code, errOut)
	}
	if code := run("skills", "create", "empty"); code != 1 || !strings.Contains(errOut.String(), "--description") {
		t.Fatalf("no content: %d %s", code, errOut)
	}
	from := filepath.Join(t.TempDir(), "SKILL.md")
	os.WriteFile(from, []byte("---\nname: changelog\ndescription: write changelogs\n---\n# Changelog\n"), 0o644)
	if code := run("skills", "create", "changelog", "--category", "writing", "--from", from); code != 0 {
		t.Fatalf("create --from: %s", errOut)
	}

	if code := run("skills", "list"); code != 0 {
		t.Fatal(errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "incident-triage") || !strings.HasPrefix(lines[2], "changelog") {
		t.Fatalf("list:\n%s", out)
	}
	run("skills", "list", "--category", "writing")
	if strings.Contains(out.String(), "incident-triage") || !strings.Contains(out.String(), "changelog") {
		t.Fatalf("list --category:\n%s", out)
	}

	if code := run("skills", "show", "changelog"); code != 0 || !strings.HasPrefix(out.String(), "---\nname: changelog") {
		t.Fatalf("show: %d %q", code, out)
	}
	if code := run("skills", "show", "nope"); code != 1 || !strings.Contains(errOut.String(), "available skills: changelog, incident-triage") {
		t.Fatalf("show unknown: %d %s", code, errOut)
	}

	if code := run("skills", "delete", "changelog"); code != 1 || !strings.Contains(errOut.String(), "--yes") {
		t.Fatalf("delete without --yes off a terminal must refuse: %d %s", code, errOut)
	}
	if code := run("skills", "delete", "changelog", "--yes"); code != 0 {
		t.Fatal(errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "skills", "writing", "changelog")); !os.IsNotExist(err) {
		t.Fatal("skill folder not deleted")
	}
}

func TestSkillsDeleteAsksOnTerminal(t *testing.T) {
	app, out, _, home := skillsTestApp(t, "n\n")
	app.IsTerminal = true
	app.Run(context.Background(), []string{"skills", "create", "keep", "--description", "keep me"})
	if code := app.Run(context.Background(), []string{"skills", "delete", "keep"}); code != 0 || !strings.Contains(out.String(), "Not deleted.") {
		t.Fatalf("%d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(home, "skills", "general", "keep", "SKILL.md")); err != nil {
		t.Fatal("answer n must keep the skill")
	}
}

func TestSkillsCheckReportsEachProblem(t *testing.T) {
	app, out, _, home := skillsTestApp(t, "")
	if code := app.Run(context.Background(), []string{"skills", "check"}); code != 0 || !strings.Contains(out.String(), "no problems") {
		t.Fatalf("empty check: %d %s", code, out)
	}
	write := func(rel, content string) string {
		p := filepath.Join(home, "skills", rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	write("ops/ok/SKILL.md", "---\nname: ok\ndescription: fine\n---\nbody\n")
	noFront := write("ops/plain/SKILL.md", "# no frontmatter\n")
	colon := write("ops/colon/SKILL.md", "---\nname: colon\ndescription: when: it breaks\n---\nbody\n")
	out.Reset()
	code := app.Run(context.Background(), []string{"skills", "check"})
	if code != 1 {
		t.Fatalf("check with problems must exit 1, got %d", code)
	}
	text := out.String()
	if !strings.Contains(text, noFront+": no YAML frontmatter") || !strings.Contains(text, "(skipped)") || !strings.Contains(text, colon+": frontmatter is not valid YAML") {
		t.Fatalf("check output:\n%s", text)
	}
	if !strings.Contains(text, "2 problem(s) in 2 file(s); 2 skill(s) usable.") {
		t.Fatalf("summary:\n%s", text)
	}
}

func TestYAMLScalarRoundTrips(t *testing.T) {
	for in, want := range map[string]string{"plain words": "plain words", "a: b": `"a: b"`, "#tag": `"#tag"`, "ends:": `"ends:"`} {
		if got := yamlScalar(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// TestSkillsListShowsBundled: on a new HERMES_HOME `hermes skills list`
// shows the skills bundled with hermes (issue 25: "skills list says none").
func TestSkillsListShowsBundled(t *testing.T) {
	app, out, errOut, _ := skillsTestApp(t, "")
	if code := app.Run(context.Background(), []string{"skills", "list"}); code != 0 {
		t.Fatal(errOut)
	}
	for _, want := range []string{"working-in-a-box", "secrets-and-egress", "triaging-logs", "writing-a-skill"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list lacks %s:\n%s", want, out)
		}
	}
	out.Reset()
	if code := app.Run(context.Background(), []string{"skills", "sync"}); code != 0 || !strings.Contains(out.String(), "up to date") {
		t.Errorf("sync: %d %s %s", code, out, errOut)
	}
}
