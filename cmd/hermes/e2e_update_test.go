package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// TestUpdateInstallsWithGoInstall: `hermes update --yes` against a
// file:// GOPROXY holding a newer release (a real module zip) runs the real
// `go install`, replaces the binary it was started as, and runs the new
// binary's `skills sync`.
func TestUpdateInstallsWithGoInstall(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go toolchain on PATH")
	}
	const version = "v0.99.0"
	src := t.TempDir()
	files := map[string]string{
		"go.mod":                      "module github.com/hermes-go/hermes\n\ngo 1.26\n",
		"cmd/hermes/main.go":          "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tfmt.Println(\"fake hermes " + version + "\", os.Args[1:])\n}\n",
		"cmd/hermes-box-init/main.go": "package main\n\nfunc main() {}\n",
	}
	for name, body := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proxy := t.TempDir()
	dir := filepath.Join(proxy, "github.com", "hermes-go", "hermes", "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, module.Version{Path: "github.com/hermes-go/hermes", Version: version}, src); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"list": []byte(version + "\n"), version + ".info": []byte(`{"Version":"` + version + `","Time":"2026-12-01T00:00:00Z"}`),
		version + ".mod": []byte(files["go.mod"]), version + ".zip": zip.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A copy of hermes to replace (the shared test binary stays).
	bin := filepath.Join(t.TempDir(), "hermes")
	b, err := os.ReadFile(hermesBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	gocache, err := exec.Command(goBin, "env", "GOCACHE").Output() // the shared build cache: std is compiled already
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "update", "--yes")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + work, "HERMES_HOME=" + filepath.Join(work, "hh"),
		"GOPROXY=file://" + proxy, "GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local",
		"GOPATH=" + filepath.Join(work, "gopath"), "GOCACHE=" + strings.TrimSpace(string(gocache))}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hermes update --yes: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "hermes-box-init")); err != nil {
		t.Errorf("hermes-box-init not installed beside hermes: %v", err)
	}
	if !strings.Contains(string(out), "→ "+version) || !strings.Contains(string(out), "Installed "+bin) ||
		!strings.Contains(string(out), "fake hermes "+version+" [skills sync]") {
		t.Errorf("update output:\n%s", out)
	}
	got, err := exec.Command(bin).Output()
	if err != nil || !strings.Contains(string(got), "fake hermes "+version) {
		t.Errorf("the binary was not replaced: %q %v", got, err)
	}
}
