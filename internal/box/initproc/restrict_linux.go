package initproc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// restrictSelf drops the init's privileges for good; every command it
// starts inherits the result. Order: Landlock (needs no_new_privs, which
// go-landlock sets), then the effective, permitted and inheritable
// capabilities of every thread (psx), then seccomp on all threads (TSYNC).
// The bounding and ambient sets of the forking thread were emptied at the
// init's start (dropBoundingSet). seccomp is the filter, built ahead
// (buildSeccomp).
func restrictSelf(s *wire.InitSpec, seccomp seccompFilter) error {
	if s.Landlock {
		if err := landlockBox(s); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if err := clearCapabilities(s.SwitchUsers); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	if err := loadSeccomp(seccomp); err != nil {
		return fmt.Errorf("load seccomp filter: %w (the kernel needs CONFIG_SECCOMP_FILTER)", err)
	}
	return nil
}

// landlockWritable are the directories of the box root that commands may
// write to (the writes land in the box's upper layer or a tmpfs); /proc,
// /sys and everything else are read-only. Best effort: older kernels get
// what their Landlock ABI supports, kernels without Landlock get nothing.
var landlockWritable = []string{"/tmp", "/var", "/run", "/dev", "/root", "/home", "/usr", "/etc",
	"/opt", "/srv", "/mnt", "/media", "/workspace"}

func landlockBox(s *wire.InitSpec) error {
	rw := append([]string{}, landlockWritable...)
	if s.Workspace != "" {
		rw = append(rw, s.Workspace)
	}
	return landlock.V7.BestEffort().RestrictPaths(
		landlock.RODirs("/"),
		landlock.RWDirs(rw...).IgnoreIfMissing().WithIoctlDev(),
	)
}

// capHeader and capData are the capget(2)/capset(2) structures
// (_LINUX_CAPABILITY_VERSION_3: two 32-bit words per set).
type capHeader struct {
	version uint32
	pid     int32
}

type capData struct {
	effective, permitted, inheritable uint32
}

// dropBoundingSet empties the capability bounding set and the ambient set
// of the calling thread (capabilities(7)); the init calls it on the locked
// thread that forks every command, so each command starts with empty sets.
// The other threads of the init never execve(2), and with no_new_privs and
// empty permitted sets they could not gain capabilities anyway. The
// bounding set does not limit the caller's effective capabilities, so the
// root can still be mounted afterwards. Per thread, this costs 41 prctl(2)
// calls instead of 41 psx broadcasts to every thread (about 1.5 ms).
func dropBoundingSet() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, e)
		}
	}
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %w", e)
	}
	return nil
}

// clearCapabilities empties the effective, permitted and inheritable sets
// of every thread (capset(2)); with switchUsers CAP_CHOWN, CAP_KILL,
// CAP_SETGID and CAP_SETUID stay effective and permitted (never
// inheritable), for commands run as another user (and signalled, killed
// at their timeout) and the ownership of files the init makes for them.
// A command still starts with none: the forking thread's bounding set is
// empty, and a switch to a non-zero uid clears them too.
func clearCapabilities(switchUsers bool) error {
	hdr := capHeader{version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]capData
	if switchUsers {
		keep := uint32(1)<<unix.CAP_CHOWN | 1<<unix.CAP_KILL | 1<<unix.CAP_SETGID | 1<<unix.CAP_SETUID
		data[0].effective, data[0].permitted = keep, keep
	}
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}
