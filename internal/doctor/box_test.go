package doctor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/box/wire"
)

// The box init check asks hermes-box-init which frame protocol it speaks:
// one of another build (an older one does not know the question) fails
// the check with the fix, since every box would fail to start.
func TestInitBinaryOfAnotherBuildFails(t *testing.T) {
	for name, tc := range map[string]struct {
		script string
		status Status
		detail string
	}{
		"same build":  {"echo " + strconv.Itoa(wire.Version), OK, ""},
		"older build": {"echo 'hermes-box-init is a box PID 1' >&2; exit 2", Fail, "frame protocol 1 or older"},
		"newer build": {"echo " + strconv.Itoa(wire.Version+1), Fail, "frame protocol " + strconv.Itoa(wire.Version+1)},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			hermes := filepath.Join(dir, "hermes")
			if err := os.WriteFile(hermes, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			init := "#!/bin/sh\n[ \"$1\" = " + wire.ProtocolArg + " ] || exit 3\n" + tc.script + "\n"
			if err := os.WriteFile(filepath.Join(dir, box.InitBinaryName), []byte(init), 0o755); err != nil {
				t.Fatal(err)
			}
			r := checkInitBinary(&Env{Executable: hermes})
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
				t.Fatalf("got %+v, want status %v with %q", r, tc.status, tc.detail)
			}
			if tc.status == Fail && !strings.Contains(r.Fix, "same build") {
				t.Errorf("fix %q does not say to install both from the same build", r.Fix)
			}
		})
	}
}
