package workspacefile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const secretValue = "sk-live-VERY-SECRET-4242"

// world is a workspace and a HERMES_HOME with a secret store and a .env,
// side by side on one filesystem (so hard links between them work).
type world struct {
	ws, home, secrets, dotenv string
}

func newWorld(t *testing.T) world {
	t.Helper()
	dir := t.TempDir()
	w := world{ws: filepath.Join(dir, "work"), home: filepath.Join(dir, "hermes-home")}
	w.secrets = filepath.Join(w.home, "secrets", "secrets.json")
	w.dotenv = filepath.Join(w.home, ".env")
	for _, d := range []string{w.ws, filepath.Dir(w.secrets)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write(t, w.secrets, `{"API":"`+secretValue+`"}`)
	write(t, w.dotenv, "OPENAI_API_KEY="+secretValue+"\n")
	return w
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// readers returns the openat2 reader and, forced, the os.Root fallback.
func readers(t *testing.T, w world) map[string]*Reader {
	t.Helper()
	r, err := Open(w.ws, w.home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	fb, err := Open(w.ws, w.home)
	if err != nil {
		t.Fatal(err)
	}
	if err := fb.useOSRoot(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fb.Close() })
	return map[string]*Reader{"openat2": r, "os.Root": fb}
}

// refused asserts that err is a one-line refusal containing want and
// that no secret was handed out.
func refused(t *testing.T, got []byte, err error, want string) {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("want a refusal (%q), got content %q err %v", want, got, err)
	}
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("refusal = %q, want one line containing %q", err, want)
	}
	if strings.Contains(string(got), secretValue) {
		t.Errorf("the secret was handed out")
	}
}

func TestReadsRegularFilesAndLinksInside(t *testing.T) {
	w := newWorld(t)
	write(t, filepath.Join(w.ws, "docs", "rules.md"), "rules")
	symlink(t, "docs/rules.md", filepath.Join(w.ws, "AGENTS.md"))
	symlink(t, "docs", filepath.Join(w.ws, "d"))
	for mode, r := range readers(t, w) {
		for _, name := range []string{"docs/rules.md", "AGENTS.md", "d/rules.md", filepath.Join(w.ws, "AGENTS.md")} {
			b, err := r.ReadFile(name, 100)
			if err != nil || string(b) != "rules" {
				t.Errorf("%s: ReadFile(%s) = %q, %v", mode, name, b, err)
			}
		}
		if _, err := r.ReadFile("missing.md", 100); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: missing file: %v, want fs.ErrNotExist", mode, err)
		}
	}
}

func TestLinksOutOfTheWorkspaceAreRefused(t *testing.T) {
	w := newWorld(t)
	outside := filepath.Dir(w.ws)
	symlink(t, w.secrets, filepath.Join(w.ws, "abs.md"))
	symlink(t, "../hermes-home/.env", filepath.Join(w.ws, "rel.md"))
	symlink(t, "/proc/self/root"+w.secrets, filepath.Join(w.ws, "proc.md"))
	symlink(t, "../../../../../../../../proc/self/root"+w.dotenv, filepath.Join(w.ws, "procrel.md"))
	symlink(t, filepath.Join(outside, "hermes-home"), filepath.Join(w.ws, "linkdir"))
	symlink(t, "linkdir/.env", filepath.Join(w.ws, "via.md"))
	for mode, r := range readers(t, w) {
		for name, want := range map[string]string{
			"abs.md":                       "abs.md is a symbolic link to a path outside the workspace",
			"rel.md":                       "rel.md is a symbolic link to a path outside the workspace",
			"proc.md":                      "proc.md is a symbolic link to a path outside the workspace",
			"procrel.md":                   "procrel.md is a symbolic link to a path outside the workspace",
			"via.md":                       "via.md is a symbolic link to a path outside the workspace",
			"linkdir/.env":                 "linkdir/.env is reached through a symbolic link to a path outside the workspace",
			"linkdir/secrets/secrets.json": "outside the workspace",
			"../hermes-home/.env":          "is not inside the workspace",
			w.dotenv:                       "is not inside the workspace",
		} {
			b, err := r.ReadFile(name, 1<<20)
			t.Run(mode+"/"+name, func(t *testing.T) { refused(t, b, err, want) })
			if _, err := r.Stat(name); !errors.Is(err, ErrRefused) {
				t.Errorf("%s: Stat(%s) = %v, want a refusal", mode, name, err)
			}
		}
		if _, err := r.ReadDir("linkdir"); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: ReadDir of a linked directory outside: %v, want a refusal", mode, err)
		}
	}
}

func TestHardLinksToHermesHomeFilesAreRefused(t *testing.T) {
	w := newWorld(t)
	if err := os.Link(w.secrets, filepath.Join(w.ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(w.dotenv, filepath.Join(w.ws, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	for mode, r := range readers(t, w) {
		for _, name := range []string{"AGENTS.md", "CLAUDE.md"} {
			b, err := r.ReadFile(name, 1<<20)
			refused(t, b, err, name+" is one of hermes' protected files in HERMES_HOME")
			if _, err := r.Stat(name); !errors.Is(err, ErrRefused) {
				t.Errorf("%s: Stat(%s) = %v, want a refusal", mode, name, err)
			}
		}
	}
}

func TestSpecialFilesAreRefusedWithoutAHang(t *testing.T) {
	w := newWorld(t)
	if err := unix.Mkfifo(filepath.Join(w.ws, "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(w.ws, "sock.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Mkdir(filepath.Join(w.ws, "AGENTS.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "fifo.md", filepath.Join(w.ws, "CLAUDE.md"))
	cases := map[string]string{
		"fifo.md":   "fifo.md is a named pipe (FIFO), not a regular file",
		"CLAUDE.md": "CLAUDE.md is a named pipe (FIFO), not a regular file",
		"sock.md":   "sock.md is a socket, not a regular file",
		"AGENTS.md": "AGENTS.md is a directory, not a file",
	}
	if unix.Mknod(filepath.Join(w.ws, "null.md"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) == nil {
		cases["null.md"] = "null.md is a device, not a regular file"
	} else {
		t.Log("mknod not permitted here; the device case is not exercised")
	}
	for mode, r := range readers(t, w) {
		for name, want := range cases {
			b, err := r.ReadFile(name, 1<<20)
			t.Run(mode+"/"+name, func(t *testing.T) { refused(t, b, err, want) })
		}
	}
}

func TestOversizedFileIsRefusedFromItsSize(t *testing.T) {
	w := newWorld(t)
	f, err := os.Create(filepath.Join(w.ws, "AGENTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: 1 GiB that takes no room
		t.Fatal(err)
	}
	f.Close()
	for _, r := range readers(t, w) {
		b, err := r.ReadFile("AGENTS.md", 1<<20)
		refused(t, b, err, "AGENTS.md is 1073741824 bytes, over the 1048576-byte limit")
	}
}

func TestControlCharacterNamesAreRefused(t *testing.T) {
	w := newWorld(t)
	name := "AGENTS\x1b[31m.md"
	write(t, filepath.Join(w.ws, name), "x")
	write(t, filepath.Join(w.ws, "ok.md"), "x")
	for mode, r := range readers(t, w) {
		b, err := r.ReadFile(name, 100)
		refused(t, b, err, `"AGENTS\x1b[31m.md" has a control character in its name`)
		ents, err := r.ReadDir(".")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if strings.Join(names, ",") != "ok.md" {
			t.Errorf("%s: ReadDir = %q, want only ok.md", mode, names)
		}
	}
}

func TestReadDirListsLinksAsLinks(t *testing.T) {
	w := newWorld(t)
	write(t, filepath.Join(w.ws, "sub", "b.txt"), "b")
	symlink(t, w.secrets, filepath.Join(w.ws, "sub", "a.txt"))
	for mode, r := range readers(t, w) {
		ents, err := r.ReadDir("sub")
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(ents) != 2 || ents[0].Name() != "a.txt" || ents[0].Type()&fs.ModeSymlink == 0 || ents[1].Name() != "b.txt" || !ents[1].Type().IsRegular() {
			t.Errorf("%s: ReadDir(sub) = %v", mode, ents)
		}
		if ok, err := r.IsDir("sub"); !ok || err != nil {
			t.Errorf("%s: IsDir(sub) = %v, %v", mode, ok, err)
		}
	}
}
