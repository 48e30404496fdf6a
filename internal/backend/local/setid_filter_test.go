package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A root command under the guard may write the workspace but not leave a
// setuid or setgid file there (a setuid-root shell copy would make every
// local user root); the same command with the guard off can, which shows
// the filter is what stops it. Ordinary modes still work.
func TestGuardRefusesSetIDModesAsRoot(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("setuid modes are refused for root commands only; not running as root")
	}
	script := `cp /bin/sh s1 && chmod 4755 s1; echo "chmod=$?"; cp /bin/sh s2 && chmod u+s s2; echo "us=$?"; ` +
		`install -m 2755 /bin/sh s3; echo "install=$?"; cp /bin/sh s4 && chmod 755 s4; echo "plain=$?"`
	f := newGuardFixture(t, SandboxWorkspaceWrite)
	out := string(f.run(t, script).Output)
	for _, name := range []string{"s1", "s2", "s3"} {
		if st, err := os.Stat(filepath.Join(f.work, name)); err == nil && st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s is %v under the guard:\n%s", name, st.Mode(), out)
		}
	}
	if st, err := os.Stat(filepath.Join(f.work, "s4")); err != nil || st.Mode().Perm() != 0o755 || !strings.Contains(out, "plain=0") {
		t.Errorf("chmod 755 must still work: %v %v\n%s", st, err, out)
	}

	off := newGuardFixture(t, SandboxOff)
	out = string(off.run(t, `cp /bin/sh s1 && chmod 4755 s1; echo "chmod=$?"`).Output)
	if st, err := os.Stat(filepath.Join(off.work, "s1")); err != nil || st.Mode()&os.ModeSetuid == 0 {
		t.Errorf("with the guard off chmod 4755 is expected to work (the control): %v %v\n%s", st, err, out)
	}
}
