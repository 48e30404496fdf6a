package box

import (
	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// The box's seccomp filter is a default-deny allowlist, as runc's and
// Docker's are. The assembled program checks the architecture field first:
// a call made through any ABI but the native one (int 0x80 / i386 on
// amd64, compat ARM on arm64) gets the default action, and x32 calls on
// amd64 (nr & 0x40000000) fail with ENOSYS before any rule is looked at
// (go-seccomp-bpf's Policy.Assemble). Native calls are matched in order:
// the explicit denials below (EPERM, for a clear error), then the
// allowlist; anything else, including calls newer than the list, fails
// with ENOSYS so that libc falls back to an older call where it can.

// seccompDefaultErrno is what an unlisted or foreign-architecture call
// returns.
const seccompDefaultErrno = unix.ENOSYS

// deniedSyscalls fail with EPERM inside the box: mounting (old and new
// mount API), namespace changes, tracing other processes, kernel keyrings,
// BPF, io_uring, perf, kernel modules and kexec, reboot, swap and
// file-handle opens (the "shocker" escape), and taking a descriptor or
// advising on the memory of another process (pidfd_getfd, process_madvise:
// the init's control socket must stay its own). None of them is in the
// allowlist either; the list follows Docker's default seccomp profile and
// sandbox.md §D2 and only chooses the error.
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
// calls added to the kernel since that glibc and Go use. Names the running
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
	"utime", "utimensat", "utimes", "vfork", "vmsplice", "wait4", "waitid", "write", "writev",
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
var allowedSocketFamilies = []seccomp.ArgumentConditions{
	{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}},
	{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_INET}},
	{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_INET6}},
	{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_NETLINK}, {Argument: 2, Operation: seccomp.Equal, Value: unix.NETLINK_ROUTE}},
	{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_NETLINK}, {Argument: 2, Operation: seccomp.Equal, Value: unix.NETLINK_SOCK_DIAG}},
}

// personalityArgs are the personality(2) values allowed (Docker's list):
// query, PER_LINUX, UNAME26, PER_LINUX32 and the 0xffffffff query.
var personalityArgs = []uint64{0, 8, 0x20000, 0x20008, 0xffffffff}

// newNamespaceFlags are the clone(2) flags that create namespaces.
const newNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP

// seccompFilter is the box's filter (see the top of this file). clone3(2),
// whose flags a filter cannot read, fails with ENOSYS so that libc falls
// back to clone(2) (as Docker does).
func seccompFilter() seccomp.Filter {
	known := map[string]int{}
	if info, err := arch.GetInfo(""); err == nil {
		known = info.SyscallNames
	}
	has := func(name string) bool { _, ok := known[name]; return ok }
	var setID []seccomp.NameWithConditions
	for _, m := range modeArgument {
		if has(m.name) {
			setID = append(setID, seccomp.NameWithConditions{Name: m.name,
				Conditions: seccomp.ArgumentConditions{{Argument: m.arg, Operation: seccomp.BitsSet, Value: setIDBits}}})
		}
	}
	allow := seccomp.SyscallGroup{Action: seccomp.ActionAllow}
	for _, name := range allowedSyscalls {
		if has(name) {
			allow.Names = append(allow.Names, name)
		}
	}
	for _, c := range allowedSocketFamilies {
		allow.NamesWithCondtions = append(allow.NamesWithCondtions, seccomp.NameWithConditions{Name: "socket", Conditions: c})
	}
	allow.NamesWithCondtions = append(allow.NamesWithCondtions,
		seccomp.NameWithConditions{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}}},
		seccomp.NameWithConditions{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: newNamespaceFlags}}})
	for _, v := range personalityArgs {
		allow.NamesWithCondtions = append(allow.NamesWithCondtions, seccomp.NameWithConditions{Name: "personality",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: v}}})
	}
	var denied []string
	for _, name := range deniedSyscalls {
		if has(name) {
			denied = append(denied, name)
		}
	}
	errno := func(e unix.Errno) seccomp.Action { return seccomp.ActionErrno | seccomp.Action(e) }
	return seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: errno(seccompDefaultErrno),
			Syscalls: []seccomp.SyscallGroup{
				{Action: seccomp.ActionErrno, Names: denied},
				{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{
					Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: newNamespaceFlags}},
				}}},
				{Action: seccomp.ActionErrno, NamesWithCondtions: setID},
				allow,
				{Action: errno(unix.EAFNOSUPPORT), Names: []string{"socket", "socketpair"}},
			},
		},
	}
}
