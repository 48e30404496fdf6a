package box

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// startSudoBox starts a box whose uid 1000 may sudo (Options.SudoUIDs, as
// hermes sandbox serve gives E2B's `user`), with this test binary bound
// as its hermes and sudo (TestMain runs SudoMain by that name).
func startSudoBox(t *testing.T) (*testBoxEnv, func(cmd string, as *backend.Account) (string, int)) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := startTestBox(t, func(o *Options) {
		o.SwitchUsers, o.SudoUIDs, o.Executable = true, []uint32{1000}, exe
		if o.InitBinary == "" {
			o.InitBinary = exe
		}
	})
	run := func(cmd string, as *backend.Account) (string, int) {
		t.Helper()
		res, err := e.env.Exec(waitfor.Context(t), backend.ExecRequest{Command: cmd, RunAs: as, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Output), res.ExitCode
	}
	return e, run
}

// E2B's `user` has passwordless sudo (issue 25): `sudo CMD` runs CMD as
// the box's root with the caller's stdin, stdout, stderr and exit status,
// in the common spellings; the user itself stays uid 1000.
func TestSudoRunsAsBoxRoot(t *testing.T) {
	_, run := startSudoBox(t)
	user := &backend.Account{UID: 1000, GID: 1000}
	for _, c := range []struct{ cmd, want string }{
		{"id -u; sudo id -u; sudo -n -u root id -g; sudo -u '#0' -E id -u", "1000\n0\n0\n0\n"},
		{"echo piped | sudo cat", "piped\n"},
		{"sudo sh -c 'echo err >&2; exit 7'; echo code=$?", "err\ncode=7\n"},
		{"sudo sh -c 'mkdir -p /usr/local/share/sudo-test && echo pkg > /usr/local/share/sudo-test/f' && stat -c %u /usr/local/share/sudo-test/f && cat /usr/local/share/sudo-test/f", "0\npkg\n"},
		{"FOO=bar sudo sh -c 'echo [$FOO] $HOME $USER $SUDO_UID'", "[] /root root 1000\n"},
		{"FOO=bar sudo -E sh -c 'echo [$FOO]'; sudo FOO=baz sh -c 'echo [$FOO]'", "[bar]\n[baz]\n"},
		{"cd /tmp && sudo pwd; sudo -i pwd; sudo -i sh -c 'echo $0' | tail -c 3", "/tmp\n/root\nsh\n"},
		{"echo 'id -u; echo $SUDO_USER' | USER=user sudo -s", "0\nuser\n"},
		{"sudo no-such-command-x; echo code=$?", "sudo: no-such-command-x: command not found\ncode=1\n"},
		{"sudo -u nobody id -u; echo code=$?", "code=1\n"},
		{"sudo -v && sudo -k && sudo -V | head -c 12", "Sudo version"},
	} {
		got, _ := run(c.cmd+" 2>&1", user)
		if c.cmd == "sudo -u nobody id -u; echo code=$?" {
			if !strings.Contains(got, "only root is available") || !strings.HasSuffix(got, c.want) {
				t.Errorf("%s: %q", c.cmd, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.cmd, got, c.want)
		}
	}
	// Another uid of the box is not in the sudoers.
	if got, code := run("sudo id -u 2>&1", &backend.Account{UID: 1001, GID: 1001}); code != 1 || !strings.Contains(got, "not in the sudoers file") {
		t.Errorf("uid 1001 sudo: %d %q", code, got)
	}
}

// A command run through sudo has exactly the rights of one the host runs
// as the box's root: no capability, the same seccomp filter, no_new_privs,
// namespaces and Landlock ruleset; and it ends with the sudo that ran it.
func TestSudoKeepsTheBoxsRestrictions(t *testing.T) {
	e, run := startSudoBox(t)
	user := &backend.Account{UID: 1000, GID: 1000}
	probe := `grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status; ` +
		`readlink /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/net /proc/self/ns/user; cat /proc/self/cgroup; ` +
		`mkdir /hermes-sudo-probe 2>/dev/null && echo ESCAPED-LANDLOCK; echo done`
	asRoot, _ := run(probe, nil)
	viaSudo, _ := run("sudo sh -c '"+strings.ReplaceAll(probe, "'", `'\''`)+"'", user)
	if viaSudo != asRoot || !strings.Contains(asRoot, "CapEff:\t0000000000000000") || strings.Contains(asRoot, "ESCAPED") {
		t.Fatalf("sudo differs from the host's root command:\nroot: %s\nsudo: %s", asRoot, viaSudo)
	}
	// A sudo that is killed (a timeout) takes its command along.
	res, err := e.env.Exec(waitfor.Context(t), backend.ExecRequest{Command: "sudo sleep 4242", RunAs: user, Timeout: 300 * time.Millisecond})
	if err != nil || !res.TimedOut {
		t.Fatalf("sudo sleep with a timeout: %+v %v", res, err)
	}
	left := func() bool {
		out, _ := run(`for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 4242'`, nil)
		return out == "0\n"
	}
	if !waitfor.Poll(t, left) {
		t.Fatal("the command sudo ran outlived the killed sudo")
	}
}
