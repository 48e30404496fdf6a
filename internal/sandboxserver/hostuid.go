package sandboxserver

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// E2BUserUID is the uid of E2B's `user` in its templates, the sandbox
// user's uid when no host account or process has it.
const E2BUserUID = 1000

// autoUserUIDs is the reserved range the sandbox user's uid comes from
// when the host uses E2BUserUID (as subordinate-uid ranges conventionally
// start at 100000, a host account is unlikely there).
const (
	autoUserUIDFirst = 101000
	autoUserUIDCount = 1000
)

// HostUIDs tells which uids the host uses: Passwd is the account
// database (/etc/passwd), Proc the process filesystem (/proc).
type HostUIDs struct {
	Passwd string
	Proc   string
}

// SystemHostUIDs reads the host's /etc/passwd and /proc.
func SystemHostUIDs() HostUIDs { return HostUIDs{Passwd: "/etc/passwd", Proc: "/proc"} }

// Used reports whether a host account or a running process has uid
// (real, effective, saved or filesystem), and which.
func (h HostUIDs) Used(uid int) (bool, string) {
	if name, ok := h.account(uid); ok {
		return true, fmt.Sprintf("host account %q (%s) has uid %d", name, h.Passwd, uid)
	}
	if pid, ok := h.process(uid); ok {
		return true, fmt.Sprintf("host process %d runs as uid %d", pid, uid)
	}
	return false, ""
}

// Account returns the name of the host account with uid, if one has it.
func (h HostUIDs) Account(uid int) (string, bool) { return h.account(uid) }

func (h HostUIDs) account(uid int) (string, bool) {
	f, err := os.Open(h.Passwd)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<20))
	for sc.Scan() {
		// name:password:UID:GID:gecos:home:shell
		fs := strings.Split(sc.Text(), ":")
		if len(fs) >= 3 && fs[2] == strconv.Itoa(uid) {
			return fs[0], true
		}
	}
	return "", false
}

func (h HostUIDs) process(uid int) (int, bool) {
	entries, err := os.ReadDir(h.Proc)
	if err != nil {
		return 0, false
	}
	want := strconv.Itoa(uid)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(h.Proc, e.Name(), "status"))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if ids, ok := strings.CutPrefix(line, "Uid:"); ok {
				for _, id := range strings.Fields(ids) {
					if id == want {
						return pid, true
					}
				}
			}
		}
	}
	return 0, false
}

// ChooseUserUID picks the host uid sandboxes' `user` runs as: commands
// run as that uid with no user namespace, so a host account or process
// with it could read their environment and files and signal them. With
// requested > 0 it is that uid, refused when the host uses it; otherwise
// E2BUserUID when the host does not use it, else the first free uid of
// 101000–101999. why says which and why, for one log line.
func ChooseUserUID(h HostUIDs, requested int) (uid int, why string, err error) {
	if requested > 0 {
		if used, who := h.Used(requested); used {
			return 0, "", fmt.Errorf("--user-uid %d: %s; the sandbox user must have a uid no host account or process uses (leave --user-uid out to pick one)", requested, who)
		}
		return requested, fmt.Sprintf("uid %d (--user-uid)", requested), nil
	}
	used, who := h.Used(E2BUserUID)
	if !used {
		return E2BUserUID, fmt.Sprintf("uid %d (E2B's; no host account or process uses it)", E2BUserUID), nil
	}
	for uid := autoUserUIDFirst; uid < autoUserUIDFirst+autoUserUIDCount; uid++ {
		if u, _ := h.Used(uid); !u {
			return uid, fmt.Sprintf("uid %d, not E2B's %d: %s", uid, E2BUserUID, who), nil
		}
	}
	return 0, "", fmt.Errorf("no free uid for the sandbox user: %s, and uids %d–%d are all in use; set one with --user-uid", who, autoUserUIDFirst, autoUserUIDFirst+autoUserUIDCount-1)
}
