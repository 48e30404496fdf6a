package tool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/internal/backend/local"
)

type fileFixture struct {
	dir  string
	home string
	opts FileToolOptions
}

// newFileFixture returns file tool options over a local backend rooted at
// a temporary workdir, with a temporary home and HERMES_HOME.
func newFileFixture(t *testing.T) fileFixture {
	t.Helper()
	dir := t.TempDir()
	home := t.TempDir()
	b, err := local.New(dir, nil, func() []string { return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return fileFixture{dir: dir, home: home, opts: FileToolOptions{Backend: b, Home: home, HermesHome: filepath.Join(home, ".hermes")}}
}

func (f fileFixture) write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f fileFixture) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
