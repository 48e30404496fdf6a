package box

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box/escapetest"
	"golang.org/x/sys/unix"
)

// abiAttack is one raw system call made from inside a box, with the exit
// status (the negated errno) the box must produce.
type abiAttack struct {
	name string
	call escapetest.Call
	want int
}

// abiAttacks: calls the native filter denies, made through the i386 and
// x32 entry points, and sockets of families the box does not need. Each
// must fail; the i386 ones succeeded before the filter checked the
// architecture.
var abiAttacks = []abiAttack{
	{"i386 unshare(0)", escapetest.Call{ABI: escapetest.I386, Nr: 310}, escapetest.ExitEPERM},
	{"i386 unshare(CLONE_NEWUSER)", escapetest.Call{ABI: escapetest.I386, Nr: 310, Args: [4]uint32{unix.CLONE_NEWUSER}}, escapetest.ExitEPERM},
	{"i386 keyctl(GET_KEYRING_ID, session)", escapetest.Call{ABI: escapetest.I386, Nr: 288, Args: [4]uint32{0, 0xfffffffd}}, escapetest.ExitEPERM},
	{"i386 io_uring_setup", escapetest.Call{ABI: escapetest.I386, Nr: 425, Args: [4]uint32{1, 0}}, escapetest.ExitEPERM},
	{"i386 getpid", escapetest.Call{ABI: escapetest.I386, Nr: 20}, escapetest.ExitEPERM},
	{"x32 getpid", escapetest.Call{ABI: escapetest.X32, Nr: 39}, escapetest.ExitENOSYS},
	{"x32 unshare(0)", escapetest.Call{ABI: escapetest.X32, Nr: 272}, escapetest.ExitENOSYS},
	{"socket(AF_VSOCK)", escapetest.Call{Nr: unix.SYS_SOCKET, Args: [4]uint32{unix.AF_VSOCK, unix.SOCK_STREAM}}, escapetest.ExitEAFNOSUPPORT},
	{"socket(AF_PACKET)", escapetest.Call{Nr: unix.SYS_SOCKET, Args: [4]uint32{unix.AF_PACKET, unix.SOCK_DGRAM}}, escapetest.ExitEAFNOSUPPORT},
	{"socket(AF_NETLINK, NETLINK_AUDIT)", escapetest.Call{Nr: unix.SYS_SOCKET, Args: [4]uint32{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}}, escapetest.ExitEAFNOSUPPORT},
	{"native unshare(0)", escapetest.Call{Nr: unix.SYS_UNSHARE}, escapetest.ExitEPERM},
}

// TestEscapeForeignABISyscalls runs each abiAttack as a static program in
// the workspace of a box and checks its exit status; a native getpid and
// an AF_INET socket still work.
func TestEscapeForeignABISyscalls(t *testing.T) {
	if !abiAttackHost(t) {
		return
	}
	e := startTestBox(t, nil)
	var script strings.Builder
	write := func(name string, c escapetest.Call) {
		if err := os.WriteFile(filepath.Join(e.workspace, name), escapetest.ELF(c), 0o755); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "./%s; echo %s=$?; ", name, name)
	}
	for i, a := range abiAttacks {
		write(fmt.Sprintf("attack%d", i), a.call)
	}
	write("getpid", escapetest.Call{Nr: unix.SYS_GETPID})
	write("inet", escapetest.Call{Nr: unix.SYS_SOCKET, Args: [4]uint32{unix.AF_INET, unix.SOCK_STREAM}})
	res := e.run(t, "cd "+e.workspace+" && "+script.String())
	out := string(res.Output)
	for i, a := range abiAttacks {
		if want := fmt.Sprintf("attack%d=%d\n", i, a.want); !strings.Contains(out, want) {
			t.Errorf("%s in the box: want exit %d (the call refused), got:\n%s", a.name, a.want, out)
		}
	}
	for _, ok := range []string{"getpid=", "inet="} {
		if strings.Contains(out, ok+"1\n") || strings.Contains(out, ok+"38\n") || strings.Contains(out, ok+"97\n") {
			t.Errorf("an allowed native call failed in the box:\n%s", out)
		}
	}
}

// abiAttackHost reports whether this machine runs the attack programs:
// x86-64 with i386 emulation (an int 0x80 getpid works on the host).
func abiAttackHost(t *testing.T) bool {
	t.Helper()
	needBoxes(t)
	if !escapetest.Supported() {
		t.Skip("the attack programs are x86-64 code")
	}
	if err := escapetest.I386Works(t.TempDir()); err != nil {
		t.Skipf("this kernel has no i386 emulation (int 0x80): %v", err)
	}
	return true
}

// TestEscapeSetuidFileInWorkspace: box root is host root on a bind
// workspace, so a setuid or setgid file written there would run as root
// for any host user. Every way of setting the bits fails and no file in
// the workspace ends up with them.
func TestEscapeSetuidFileInWorkspace(t *testing.T) {
	e := startTestBox(t, nil)
	open := escapetest.Call{Nr: unix.SYS_OPENAT, Args: [4]uint32{0xffffff9c, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755},
		Str: e.workspace + "/by-open", StrArg: 1}
	mknod := escapetest.Call{Nr: unix.SYS_MKNODAT, Args: [4]uint32{0xffffff9c, 0, unix.S_IFREG | 0o6755},
		Str: e.workspace + "/by-mknod", StrArg: 1}
	if escapetest.Supported() {
		os.WriteFile(filepath.Join(e.workspace, "open-suid"), escapetest.ELF(open), 0o755)
		os.WriteFile(filepath.Join(e.workspace, "mknod-suid"), escapetest.ELF(mknod), 0o755)
	}
	res := e.run(t, "cd "+e.workspace+` && cp /bin/sh sh-copy && chmod 4755 sh-copy; chmod u+s sh-copy; chmod g+s sh-copy;
install -m 6755 /bin/sh by-install; cp -p /bin/su by-cp-p 2>/dev/null || cp -p /usr/bin/passwd by-cp-p;
mkdir d && chmod 2775 d; ./open-suid; ./mknod-suid; true`)
	var found []string
	filepath.Walk(e.workspace, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			found = append(found, fmt.Sprintf("%s %v", p, fi.Mode()))
		}
		return nil
	})
	if len(found) > 0 {
		t.Fatalf("the box left setuid/setgid files in the host workspace:\n%s\nbox output:\n%s", strings.Join(found, "\n"), res.Output)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "sh-copy")); err != nil {
		t.Fatalf("ordinary file copies should still work in the workspace: %v\n%s", err, res.Output)
	}
	mounts := e.run(t, "grep ' "+e.workspace+" ' /proc/self/mountinfo")
	if !strings.Contains(string(mounts.Output), "nosuid") || !strings.Contains(string(mounts.Output), "nodev") {
		t.Errorf("the workspace mount is not nosuid,nodev in the box:\n%s", mounts.Output)
	}
}

// TestEscapeMountinfoHidesHermesHome: the box's mount table does not show
// where HERMES_HOME (which names the user, and holds the box's layer) is
// on the host.
func TestEscapeMountinfoHidesHermesHome(t *testing.T) {
	e := startTestBox(t, nil)
	res := e.run(t, "cat /proc/self/mountinfo /proc/mounts")
	if strings.Contains(string(res.Output), e.home) {
		t.Fatalf("the box's mount table shows HERMES_HOME %s:\n%s", e.home, res.Output)
	}
}

// TestEscapeCommandLineHiddenFromHostPs: what the model runs in a box is
// not on any host process's command line, where every host user could
// read it (ps, /proc/PID/cmdline).
func TestEscapeCommandLineHiddenFromHostPs(t *testing.T) {
	e := startTestBox(t, nil)
	const marker = "hermes-cmdline-marker-7f3a"
	ctx := context.Background()
	p, err := e.env.Start(ctx, backendReq("echo started; sleep 30 || echo "+marker))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	for i := 0; i < 100 && !strings.Contains(string(p.Output()), "started"); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range paths {
		if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), marker) {
			t.Fatalf("%s shows the box command: %q", path, data)
		}
	}
	res := e.run(t, "echo $HERMES_BOX_COMMAND; echo ok")
	if got := trimmed(res); got != "ok" {
		t.Errorf("the command's variable leaked into the command: %q", got)
	}
}
