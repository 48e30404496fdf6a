package tool

import (
	"fmt"
	"strings"
	"testing"
)

func searchFixture(t *testing.T) fileFixture {
	f := newFileFixture(t)
	f.write(t, "cmd/main.go", "package main\n\nfunc main() {\n\trun() // TODO tidy\n}\n")
	f.write(t, "internal/run.go", "package internal\n\n// TODO: handle errors\nfunc run() error { return nil }\n")
	f.write(t, "README.md", "# Demo\nTODO write docs\n")
	f.write(t, ".git/config", "TODO in git metadata\n")
	f.write(t, "node_modules/dep/index.js", "// TODO in a dependency\n")
	f.write(t, "image.bin", "TODO\x00binary")
	return f
}

func TestSearchContent(t *testing.T) {
	f := searchFixture(t)
	r := run(t, NewSearchFilesTool(f.opts), `{"pattern": "TODO"}`)
	want := "README.md:2: TODO write docs\ncmd/main.go:4: \trun() // TODO tidy\ninternal/run.go:3: // TODO: handle errors\n[1 binary or very large file(s) skipped]"
	if r.IsError || r.Content != want {
		t.Fatalf("got:\n%s\nwant:\n%s", r.Content, want)
	}
}

func TestSearchContentFileGlobPathAndRegex(t *testing.T) {
	f := searchFixture(t)
	tl := NewSearchFilesTool(f.opts)
	if r := run(t, tl, `{"pattern": "func \\w+\\(\\)", "file_glob": "*.go"}`); r.Content != "cmd/main.go:3: func main() {\ninternal/run.go:4: func run() error { return nil }" {
		t.Fatalf("got %q", r.Content)
	}
	if r := run(t, tl, `{"pattern": "TODO", "path": "internal"}`); r.Content != "internal/run.go:3: // TODO: handle errors" {
		t.Fatalf("got %q", r.Content)
	}
	if r := run(t, tl, `{"pattern": "TODO", "path": "README.md"}`); r.Content != "README.md:2: TODO write docs" {
		t.Fatalf("single file: %q", r.Content)
	}
	if r := run(t, tl, `{"pattern": "nothing-here"}`); r.IsError || !strings.Contains(r.Content, "no lines match") {
		t.Fatalf("no match: %+v", r)
	}
}

func TestSearchLimit(t *testing.T) {
	f := newFileFixture(t)
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	f.write(t, "many.txt", b.String())
	tl := NewSearchFilesTool(f.opts)
	r := run(t, tl, `{"pattern": "hit"}`)
	if strings.Count(r.Content, "many.txt:") != 50 || !strings.Contains(r.Content, "limit of 50 results reached") {
		t.Fatalf("default limit: %d results", strings.Count(r.Content, "many.txt:"))
	}
	r = run(t, tl, `{"pattern": "hit", "limit": 3}`)
	if !strings.HasPrefix(r.Content, "many.txt:1: hit 0\nmany.txt:2: hit 1\nmany.txt:3: hit 2\n[limit of 3") {
		t.Fatalf("got %q", r.Content)
	}
}

func TestSearchFiles(t *testing.T) {
	f := searchFixture(t)
	tl := NewSearchFilesTool(f.opts)
	if r := run(t, tl, `{"pattern": "*.go", "target": "files"}`); r.Content != "cmd/main.go\ninternal/run.go" {
		t.Fatalf("got %q", r.Content)
	}
	if r := run(t, tl, `{"pattern": "internal/**/*.go", "target": "files"}`); r.Content != "internal/run.go" {
		t.Fatalf("got %q", r.Content)
	}
	if r := run(t, tl, `{"pattern": "*.js", "target": "files"}`); !strings.Contains(r.Content, "no files match") {
		t.Fatalf("node_modules must be skipped: %q", r.Content)
	}
}

func TestSearchErrors(t *testing.T) {
	f := searchFixture(t)
	tl := NewSearchFilesTool(f.opts)
	for args, want := range map[string]string{
		``:                 "pattern is required",
		`{"pattern": "("}`: "not a valid regular expression",
		`{"pattern": "x", "target": "everything"}`: "target must be",
		`{"pattern": "x", "path": "missing"}`:      "missing",
		`{"pattern": "x", "file_glob": "[a"}`:      "not a valid glob",
	} {
		if r := run(t, tl, args); !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("%s: want %q, got %+v", args, want, r)
		}
	}
}
