package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileCreatesParentsAndOverwrites(t *testing.T) {
	f := newFileFixture(t)
	tl := NewWriteFileTool(f.opts)
	r := run(t, tl, `{"path": "reports/2026/incident.md", "content": "# Incident\nline\n"}`)
	if r.IsError || !strings.HasPrefix(r.Content, "Created ") || !strings.Contains(r.Content, "16 bytes, 2 lines") {
		t.Fatalf("got %+v", r)
	}
	if got := f.read(t, "reports/2026/incident.md"); got != "# Incident\nline\n" {
		t.Fatalf("got %q", got)
	}
	p := f.write(t, "run.sh", "old")
	_ = os.Chmod(p, 0o755)
	r = run(t, tl, `{"path": "run.sh", "content": "#!/bin/sh\r\necho \"a\\\\b\"\t\r\n"}`)
	if r.IsError || !strings.HasPrefix(r.Content, "Overwrote ") {
		t.Fatalf("got %+v", r)
	}
	if got := f.read(t, "run.sh"); got != "#!/bin/sh\r\necho \"a\\\\b\"\t\r\n" {
		t.Fatalf("bytes changed: %q", got)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o755 {
		t.Fatalf("mode lost: %v", st.Mode())
	}
	if r := run(t, tl, `{"path": "empty.txt", "content": ""}`); r.IsError || f.read(t, "empty.txt") != "" {
		t.Fatalf("empty content: %+v", r)
	}
}

func TestWriteFileRefusesSensitivePaths(t *testing.T) {
	f := newFileFixture(t)
	tl := NewWriteFileTool(f.opts)
	for _, p := range []string{
		"~/.ssh/authorized_keys",
		filepath.Join(f.home, ".ssh", "id_rsa"),
		"~/.aws/credentials",
		filepath.Join(f.home, ".hermes", ".env"),
		filepath.Join(f.home, ".hermes", "auth.json"),
		filepath.Join(f.home, ".hermes", "secrets", "x"),
		".env",
		"app/.env.production",
		"/etc/sudoers",
	} {
		r := run(t, tl, `{"path": "`+p+`", "content": "x"}`)
		if !r.IsError || !strings.Contains(r.Content, "refused") {
			t.Errorf("%s: want refusal, got %+v", p, r)
		}
	}
	if _, err := os.Stat(filepath.Join(f.home, ".ssh")); err == nil {
		t.Fatal("a refused write created ~/.ssh")
	}
}

func TestWriteFileArgumentErrors(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, "d/x", "")
	tl := NewWriteFileTool(f.opts)
	for args, want := range map[string]string{
		`{"path": "a.txt"}`:             "content is required",
		`{"content": "x"}`:              "path is required",
		``:                              "path is required",
		`{"path": "d", "content": "x"}`: "is a directory",
	} {
		if r := run(t, tl, args); !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("%s: want %q, got %+v", args, want, r)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "a.txt")); err == nil {
		t.Fatal("bad arguments created a file")
	}
}
