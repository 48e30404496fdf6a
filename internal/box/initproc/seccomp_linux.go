package initproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/syscalls"
)

// The box's seccomp filter is a default-deny allowlist, as runc's and
// Docker's are. The program (seccompProgram) checks the architecture field
// first: a call made through any ABI but the native one (int 0x80 / i386
// on amd64, compat ARM on arm64) fails with EPERM, and x32 calls on amd64
// (nr & 0x40000000) with ENOSYS, before any rule is looked at. Native
// calls then meet the argument rules (setuid modes, socket families,
// namespace clone flags, personality), then the allowlist, compiled to
// ranges of call numbers; anything else fails with EPERM, as in Docker's
// profile. clone3 and openat2, which libc replaces by older calls when
// they are missing, fail with ENOSYS. Every rule is a short block that
// returns or falls through to the next, so no jump is ever longer than
// BPF's 255 instructions. The name-to-number tables are internal/syscalls'
// (golang.org/x/sys's numbers).

// deniedSyscalls fail with EPERM inside the box: mounting (old and new
// mount API), namespace changes, tracing other processes, kernel keyrings,
// BPF, io_uring, perf, kernel modules and kexec, reboot, swap and
// file-handle opens (the "shocker" escape), and taking a descriptor or
// advising on the memory of another process (pidfd_getfd, process_madvise:
// the init's control socket must stay its own). None of them is in the
// allowlist either; the list follows Docker's default seccomp profile and
// sandbox.md §D2 and documents what must never be allowed.
var deniedSyscalls = []string{
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr", "unshare", "setns", "ptrace", "process_vm_readv",
	"process_vm_writev", "bpf", "kexec_load", "kexec_file_load", "keyctl", "add_key",
	"request_key", "io_uring_setup", "io_uring_enter", "io_uring_register", "perf_event_open",
	"init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff",
	"open_by_handle_at", "name_to_handle_at", "userfaultfd", "acct", "quotactl", "chroot",
	"pidfd_getfd", "process_madvise",
}

// allowedSyscalls is the allowlist: the unconditional part of Docker's
// default profile (moby profiles/seccomp/default.json) for a process
// without capabilities, minus what deniedSyscalls names and openat2 (its
// mode sits in a struct the filter cannot read, see modeArgument), plus
// calls added to the kernel since that glibc and Go use (uretprobe is only
// valid from the kernel's own uprobe trampoline). Names the running
// architecture does not have (open, stat... on arm64) are skipped.
var allowedSyscalls = []string{
	"accept", "accept4", "access", "adjtimex", "alarm", "arch_prctl", "bind", "brk", "cachestat",
	"capget", "capset", "chdir", "chmod", "chown", "clock_adjtime", "clock_getres", "clock_gettime",
	"clock_nanosleep", "close", "close_range", "connect", "copy_file_range", "creat", "dup", "dup2",
	"dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
	"epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat",
	"exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fallocate", "fanotify_mark",
	"fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchownat", "fcntl", "fdatasync",
	"fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstatfs",
	"fsync", "ftruncate", "futex", "futex_requeue", "futex_wait", "futex_waitv", "futex_wake",
	"futimesat", "getcpu", "getcwd", "getdents", "getdents64", "getegid", "geteuid", "getgid",
	"getgroups", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid",
	"getpriority", "getrandom", "getresgid", "getresuid", "getrlimit", "get_robust_list",
	"getrusage", "getsid", "getsockname", "getsockopt", "get_thread_area", "gettid",
	"gettimeofday", "getuid", "getxattr", "getxattrat", "inotify_add_watch", "inotify_init",
	"inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy", "io_getevents",
	"io_pgetevents", "ioprio_get", "ioprio_set", "io_setup", "io_submit", "kill",
	"landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "lchown",
	"lgetxattr", "link", "linkat", "listen", "listxattr", "listxattrat", "llistxattr",
	"lremovexattr", "lseek", "lsetxattr", "lstat", "madvise", "map_shadow_stack", "membarrier",
	"memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock",
	"mlock2", "mlockall", "mmap", "modify_ldt", "mprotect", "mq_getsetattr", "mq_notify",
	"mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink", "mremap", "mseal", "msgctl",
	"msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap", "nanosleep",
	"newfstatat", "open", "openat", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
	"pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "prctl", "pread64", "preadv",
	"preadv2", "prlimit64", "process_mrelease", "pselect6", "pwrite64", "pwritev", "pwritev2",
	"read", "readahead", "readlink", "readlinkat", "readv", "recvfrom", "recvmmsg", "recvmsg",
	"remap_file_pages", "removexattr", "removexattrat", "rename", "renameat", "renameat2",
	"restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask",
	"rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo",
	"sched_getaffinity", "sched_getattr", "sched_getparam", "sched_get_priority_max",
	"sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval", "sched_setaffinity",
	"sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
	"semctl", "semget", "semop", "semtimedop", "sendfile", "sendmmsg", "sendmsg", "sendto",
	"setfsgid", "setfsuid", "setgid", "setgroups", "setitimer", "setpgid", "setpriority",
	"setregid", "setresgid", "setresuid", "setreuid", "setrlimit", "set_robust_list", "setsid",
	"setsockopt", "set_thread_area", "set_tid_address", "setuid", "setxattr", "setxattrat",
	"shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4",
	"splice", "stat", "statfs", "statx", "symlink", "symlinkat", "sync", "sync_file_range",
	"syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete",
	"timer_getoverrun", "timer_gettime", "timer_settime", "timerfd_create", "timerfd_gettime",
	"timerfd_settime", "times", "tkill", "truncate", "umask", "uname", "unlink", "unlinkat",
	"uretprobe", "utime", "utimensat", "utimes", "vfork", "vmsplice", "wait4", "waitid", "write", "writev",
}

// modeArgument is, per call that takes a file mode, the index of that
// argument. A mode with the setuid or setgid bit fails with EPERM: box root
// is host root on a bind-mounted workspace, so a setuid file written there
// would run as root for any host user (chmod 4755, open(O_CREAT, 04755),
// mknod S_IFREG|S_ISUID, cp -p / tar -p of such a file). openat2, whose
// mode the filter cannot read, is not allowed at all.
var modeArgument = []struct {
	name string
	arg  uint32
}{
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"creat", 1}, {"open", 2},
	{"openat", 3}, {"mknod", 1}, {"mknodat", 2},
}

// setIDBits are S_ISUID and S_ISGID.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// allowedSocketFamilies are the address families the box may open
// sockets in: unix, IPv4 and IPv6 (loopback and the egress proxy), and
// netlink for routing (ip, getifaddrs) and socket diagnostics (ss) only.
// Every other family (AF_VSOCK, whose port space is the host VM's;
// AF_PACKET, AF_ALG, AF_KEY, AF_XDP, bluetooth, ...) fails with
// EAFNOSUPPORT.
var allowedSocketFamilies = [][]seccompCond{
	{{arg: 0, eq: unix.AF_UNIX}},
	{{arg: 0, eq: unix.AF_INET}},
	{{arg: 0, eq: unix.AF_INET6}},
	{{arg: 0, eq: unix.AF_NETLINK}, {arg: 2, eq: unix.NETLINK_ROUTE}},
	{{arg: 0, eq: unix.AF_NETLINK}, {arg: 2, eq: unix.NETLINK_SOCK_DIAG}},
}

// personalityArgs are the personality(2) values allowed (Docker's list):
// PER_LINUX, PER_LINUX32, UNAME26, PER_LINUX32|UNAME26 and the
// 0xffffffff query.
var personalityArgs = []uint32{0, 8, 0x20000, 0x20008, 0xffffffff}

// newNamespaceFlags are the clone(2) flags that create namespaces.
const newNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP

// seccompCond is one argument test of a rule: the whole 64-bit argument
// equals eq, or (when anyBits is set) its low 32 bits share a bit with
// anyBits (modes and clone flags: the kernel reads only those bits).
type seccompCond struct {
	arg     uint32
	eq      uint32
	anyBits uint32
}

// seccompRule returns ret for call nr when every cond holds.
type seccompRule struct {
	nr    int
	conds []seccompCond
	ret   uint32
}

// seccompRet* are SECCOMP_RET_* values.
const (
	seccompRetAllow = unix.SECCOMP_RET_ALLOW
	seccompRetErrno = unix.SECCOMP_RET_ERRNO
)

func seccompErrno(e unix.Errno) uint32 { return seccompRetErrno | uint32(e) }

// seccompRules are the argument rules for the native architecture, in
// evaluation order.
func seccompRules(names map[string]int) []seccompRule {
	var rules []seccompRule
	add := func(name string, ret uint32, conds ...seccompCond) {
		if nr, ok := names[name]; ok {
			rules = append(rules, seccompRule{nr: nr, conds: conds, ret: ret})
		}
	}
	add("clone", seccompErrno(unix.EPERM), seccompCond{arg: 0, anyBits: newNamespaceFlags})
	for _, m := range modeArgument {
		add(m.name, seccompErrno(unix.EPERM), seccompCond{arg: m.arg, anyBits: setIDBits})
	}
	for _, c := range allowedSocketFamilies {
		add("socket", seccompRetAllow, c...)
	}
	add("socket", seccompErrno(unix.EAFNOSUPPORT))
	add("socketpair", seccompRetAllow, seccompCond{arg: 0, eq: unix.AF_UNIX})
	add("socketpair", seccompErrno(unix.EAFNOSUPPORT))
	for _, v := range personalityArgs {
		add("personality", seccompRetAllow, seccompCond{arg: 0, eq: v})
	}
	add("clone3", seccompErrno(unix.ENOSYS))
	add("openat2", seccompErrno(unix.ENOSYS))
	add("clone", seccompRetAllow)
	return rules
}

// seccompData offsets (struct seccomp_data, linux/seccomp.h).
const (
	seccompNrOffset   = 0
	seccompArchOffset = 4
	seccompArgsOffset = 16
)

// seccompProgram assembles the box's filter for the running architecture.
func seccompProgram() ([]bpf.Instruction, error) {
	info, err := syscalls.Native()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	loadNr := bpf.LoadAbsolute{Off: seccompNrOffset, Size: 4}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArchOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: info.AuditArch, SkipTrue: 1},
		bpf.RetConstant{Val: seccompErrno(unix.EPERM)},
		loadNr,
	}
	if info.X32Mask != 0 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: info.X32Mask, SkipFalse: 1},
			bpf.RetConstant{Val: seccompErrno(unix.ENOSYS)})
	}
	for _, r := range seccompRules(info.Numbers) {
		prog = append(prog, r.block(loadNr)...)
	}
	var nrs []int
	for _, name := range allowedSyscalls {
		if nr, ok := info.Numbers[name]; ok {
			nrs = append(nrs, nr)
		}
	}
	slices.Sort(nrs)
	for i := 0; i < len(nrs); {
		j := i
		for j+1 < len(nrs) && nrs[j+1] <= nrs[j]+1 {
			j++
		}
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(nrs[j]), SkipTrue: 2},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(nrs[i]), SkipFalse: 1},
			bpf.RetConstant{Val: seccompRetAllow})
		i = j + 1
	}
	prog = append(prog, bpf.RetConstant{Val: seccompErrno(unix.EPERM)})
	if len(prog) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: the filter has %d instructions, more than BPF's %d", len(prog), unix.BPF_MAXINSNS)
	}
	return prog, nil
}

// block is r as instructions that start and end with the call number in
// the accumulator: return r.ret when the number and every condition
// match, else fall through.
func (r seccompRule) block(loadNr bpf.Instruction) []bpf.Instruction {
	lo := func(arg uint32) uint32 { return seccompArgsOffset + 8*arg + argWordOffset(false) }
	hi := func(arg uint32) uint32 { return seccompArgsOffset + 8*arg + argWordOffset(true) }
	var body []bpf.Instruction
	var fails []int // indexes of jumps whose false branch leaves the block
	for _, c := range r.conds {
		body = append(body, bpf.LoadAbsolute{Off: lo(c.arg), Size: 4})
		if c.anyBits != 0 {
			body = append(body, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.anyBits})
			fails = append(fails, len(body)-1)
			continue
		}
		body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.eq})
		fails = append(fails, len(body)-1)
		body = append(body, bpf.LoadAbsolute{Off: hi(c.arg), Size: 4}, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0})
		fails = append(fails, len(body)-1)
	}
	body = append(body, bpf.RetConstant{Val: r.ret})
	end := len(body) // index of the trailing reload, relative to body
	for _, i := range fails {
		j := body[i].(bpf.JumpIf)
		j.SkipFalse = uint8(end - i - 1)
		body[i] = j
	}
	head := bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(r.nr), SkipFalse: uint8(len(body))}
	if len(r.conds) == 0 {
		return []bpf.Instruction{head, body[len(body)-1]}
	}
	head.SkipFalse++ // also past the reload, which the number still is in A for
	out := append([]bpf.Instruction{head}, body...)
	return append(out, loadNr)
}

// argWordOffset is the offset of the high or low 32-bit word of a 64-bit
// argument in seccomp_data, which is in native byte order.
func argWordOffset(high bool) uint32 {
	littleEndian := binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	if high == littleEndian {
		return 4
	}
	return 0
}

// seccompFilter is the box's assembled seccomp program, or why it could
// not be built.
type seccompFilter struct {
	filter []unix.SockFilter
	err    error
}

// buildSeccomp assembles the box's filter (seccompProgram). The init
// builds it while it boots, off the path of the box start.
func buildSeccomp() seccompFilter {
	insts, err := seccompProgram()
	if err != nil {
		return seccompFilter{err: err}
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return seccompFilter{err: fmt.Errorf("seccomp: assemble: %w", err)}
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return seccompFilter{filter: filter}
}

// loadSeccomp sets no_new_privs and installs the box's filter on every
// thread of the process (SECCOMP_FILTER_FLAG_TSYNC).
func loadSeccomp(f seccompFilter) error {
	if f.err != nil {
		return f.err
	}
	if len(f.filter) == 0 {
		return errors.New("seccomp: empty filter")
	}
	prog := unix.SockFprog{Len: uint16(len(f.filter)), Filter: &f.filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: set no_new_privs: %w", err)
	}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		return e
	}
	if r != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronized", r)
	}
	return nil
}
