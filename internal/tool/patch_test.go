package tool

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func patchArgsJSON(path, oldS, newS string, all bool) string {
	b, _ := json.Marshal(map[string]any{"path": path, "old_string": oldS, "new_string": newS, "replace_all": all})
	return string(b)
}

func TestPatchReplacesExactlyOnce(t *testing.T) {
	f := newFileFixture(t)
	p := f.write(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	_ = os.Chmod(p, 0o600)
	r := run(t, NewPatchTool(f.opts), patchArgsJSON("main.go", "\tprintln(\"hi\")", "\tprintln(\"hello\")\n\tprintln(\"bye\")", false))
	if r.IsError {
		t.Fatal(r.Content)
	}
	if got := f.read(t, "main.go"); got != "package main\n\nfunc main() {\n\tprintln(\"hello\")\n\tprintln(\"bye\")\n}\n" {
		t.Fatalf("got %q", got)
	}
	for _, want := range []string{"1 replacement", "@@ -4,1 +4,2 @@", "-\tprintln(\"hi\")", "+\tprintln(\"bye\")"} {
		if !strings.Contains(r.Content, want) {
			t.Errorf("preview lacks %q:\n%s", want, r.Content)
		}
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode changed: %v", st.Mode())
	}
}

func TestPatchKeepsCRLFTabsBackslashes(t *testing.T) {
	f := newFileFixture(t)
	tl := NewPatchTool(f.opts)
	// CRLF given exactly.
	f.write(t, "crlf.txt", "one\r\ntwo\r\nthree\r\n")
	if r := run(t, tl, patchArgsJSON("crlf.txt", "two\r\n", "TWO\r\n", false)); r.IsError {
		t.Fatal(r.Content)
	}
	if got := f.read(t, "crlf.txt"); got != "one\r\nTWO\r\nthree\r\n" {
		t.Fatalf("crlf exact: %q", got)
	}
	// LF given for a CRLF file: matched with the file's endings, no LF introduced.
	if r := run(t, tl, patchArgsJSON("crlf.txt", "one\nTWO\n", "1\n2\n", false)); r.IsError || !strings.Contains(r.Content, "CRLF") {
		t.Fatalf("crlf from lf: %+v", r)
	}
	if got := f.read(t, "crlf.txt"); got != "1\r\n2\r\nthree\r\n" {
		t.Fatalf("crlf from lf: %q", got)
	}
	// Tabs and backslashes byte for byte, including in the untouched rest.
	orig := "a\tb\\n\\\\x\n\tindent\\t\nC:\\path\\to\n"
	f.write(t, "esc.txt", orig)
	if r := run(t, tl, patchArgsJSON("esc.txt", "C:\\path\\to", "D:\\new\\\\dir\t", false)); r.IsError {
		t.Fatal(r.Content)
	}
	if got := f.read(t, "esc.txt"); got != "a\tb\\n\\\\x\n\tindent\\t\nD:\\new\\\\dir\t\n" {
		t.Fatalf("escapes: %q", got)
	}
	// A literal "\n" (backslash n) is not a newline.
	if r := run(t, tl, patchArgsJSON("esc.txt", "b\\n\\\\x", "B", false)); r.IsError {
		t.Fatal(r.Content)
	}
	if got := f.read(t, "esc.txt"); got != "a\tB\n\tindent\\t\nD:\\new\\\\dir\t\n" {
		t.Fatalf("literal backslash-n: %q", got)
	}
}

func TestPatchNoMatchShowsClosestLine(t *testing.T) {
	f := newFileFixture(t)
	orig := "def handler(event):\n    return process(event)\n"
	f.write(t, "h.py", orig)
	r := run(t, NewPatchTool(f.opts), patchArgsJSON("h.py", "    return proces(evnt)", "x", false))
	if !r.IsError || !strings.Contains(r.Content, "not found") || !strings.Contains(r.Content, "2|    return process(event)") {
		t.Fatalf("got %+v", r)
	}
	r = run(t, NewPatchTool(f.opts), patchArgsJSON("h.py", "def handler(event):\n  return process(event)", "x", false))
	if !r.IsError || !strings.Contains(r.Content, "different whitespace") {
		t.Fatalf("got %+v", r)
	}
	if f.read(t, "h.py") != orig {
		t.Fatal("a failed patch changed the file")
	}
}

func TestPatchAmbiguousAndReplaceAll(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, "c.txt", "x = 1\ny = 2\nx = 1\nz\nx = 1\n")
	tl := NewPatchTool(f.opts)
	r := run(t, tl, patchArgsJSON("c.txt", "x = 1", "x = 9", false))
	if !r.IsError || !strings.Contains(r.Content, "occurs 3 times") || !strings.Contains(r.Content, "lines 1, 3, 5") || !strings.Contains(r.Content, "replace_all") {
		t.Fatalf("got %+v", r)
	}
	r = run(t, tl, patchArgsJSON("c.txt", "x = 1", "x = 9", true))
	if r.IsError || !strings.Contains(r.Content, "3 replacement") {
		t.Fatalf("got %+v", r)
	}
	if got := f.read(t, "c.txt"); got != "x = 9\ny = 2\nx = 9\nz\nx = 9\n" {
		t.Fatalf("got %q", got)
	}
}

func TestPatchArgumentErrors(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, "a.txt", "abc\n")
	tl := NewPatchTool(f.opts)
	for args, want := range map[string]string{
		``:                                     "path is required",
		`{"path": "a.txt", "new_string": "x"}`: "old_string is required",
		`{"path": "a.txt", "old_string": "", "new_string": "x"}`:      "old_string is required",
		`{"path": "a.txt", "old_string": "abc"}`:                      "new_string is required",
		`{"path": "a.txt", "old_string": "abc", "new_string": "abc"}`: "identical",
		`{"path": "b.txt", "old_string": "a", "new_string": "b"}`:     "file not found",
		`{"path": ".env", "old_string": "a", "new_string": "b"}`:      "refused",
	} {
		if r := run(t, tl, args); !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("%s: want %q, got %+v", args, want, r)
		}
	}
	// Deleting text with an empty new_string is allowed.
	if r := run(t, tl, `{"path": "a.txt", "old_string": "b", "new_string": ""}`); r.IsError || f.read(t, "a.txt") != "ac\n" {
		t.Fatalf("delete: %+v", r)
	}
}

// Regression (issue 8): the patch result showed the changed fragment
// ("-hi" / "+bye") instead of a line diff. It shows whole lines with
// their numbers, unchanged lines of the block as context.
func TestPatchResultIsLineDiff(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, "cfg.go", "package cfg\n\nconst (\n\tA = 1\n\tTimeout = 30 // seconds\n\tB = 2\n)\n")
	r := run(t, NewPatchTool(f.opts), patchArgsJSON("cfg.go", "30 // seconds\n\tB", "60 // seconds\n\tB", false))
	if r.IsError {
		t.Fatal(r.Content)
	}
	want := "@@ -5,2 +5,2 @@\n-\tTimeout = 30 // seconds\n+\tTimeout = 60 // seconds\n \tB = 2\n"
	if !strings.Contains(r.Content, want) {
		t.Fatalf("result:\n%s\nwant a line diff containing:\n%s", r.Content, want)
	}
}
