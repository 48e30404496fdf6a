package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// fakeGo stands in for the Go toolchain install.sh runs: `go version`,
// and a `go build -o DIR/ ...` that returns only once install.sh has
// printed a progress line (the event a long build shows), leaving two
// small scripts as the binaries.
const fakeGo = `#!/bin/sh
case "$1" in
version) echo "go version go1.26.8 linux/amd64"; exit 0 ;;
build) ;;
*) echo "fake go: $*" >&2; exit 2 ;;
esac
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out=$2; shift; fi
  shift
done
until grep -q "still building" "$INSTALL_LOG"; do sleep 0.05; done
printf '#!/bin/sh\necho "Hermes Agent v0.0.1 (2026.1.1)"\necho "Install method: install.sh"\n' > "$out/hermes"
printf '#!/bin/sh\n' > "$out/hermes-box-init"
chmod +x "$out/hermes" "$out/hermes-box-init"
`

// install.sh says what it builds and that a first build takes minutes
// before it starts, prints progress while the build runs, and names what
// it installed where (a new user saw minutes of silence).
func TestInstallScriptShowsProgress(t *testing.T) {
	script, err := filepath.Abs("../../install.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go")
	if err := os.WriteFile(goBin, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "install.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	prefix := filepath.Join(dir, "prefix")
	cmd := exec.CommandContext(waitfor.Context(t), "bash", script)
	cmd.Env = append(os.Environ(), "GO="+goBin, "PREFIX="+prefix, "HERMES_INSTALL_PROGRESS_SECONDS=1", "INSTALL_LOG="+logPath)
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	out, _ := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	text := string(out)
	bin := filepath.Join(prefix, "bin")
	before := strings.Index(text, "Building hermes and hermes-box-init with go1.26.8 from ")
	progress := strings.Index(text, "  still building (1s)...\n")
	installed := strings.Index(text, "Installed into "+bin+":\n  hermes ")
	if before < 0 || progress < before || installed < progress || !strings.Contains(text, "a few minutes") ||
		!strings.Contains(text, "hermes-box-init") || !strings.Contains(text, "Install method: install.sh") {
		t.Fatalf("install.sh printed:\n%s", text)
	}
	for _, name := range []string{"hermes", "hermes-box-init", "hermes-agent", "hermes-acp"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			t.Error(err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(bin, ".hermes-install.*")); len(left) > 0 {
		t.Errorf("staging dirs left: %v", left)
	}
}
