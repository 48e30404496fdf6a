package initproc

import (
	"encoding/binary"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

func TestSeccompFilterAssembles(t *testing.T) {
	insts, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bpf.Assemble(insts); err != nil {
		t.Fatalf("box seccomp program does not assemble: %v", err)
	}
}

// TestSeccompListsNameRealCalls: every name of the allow and deny lists is
// a system call of x86-64, so none is silently skipped there by a typo.
func TestSeccompListsNameRealCalls(t *testing.T) {
	info, err := arch.GetInfo("amd64")
	if err != nil {
		t.Fatal(err)
	}
	for _, list := range [][]string{allowedSyscalls, deniedSyscalls} {
		for _, name := range list {
			if _, ok := info.SyscallNames[name]; !ok {
				t.Errorf("%q is not an x86-64 system call", name)
			}
		}
	}
	for _, name := range deniedSyscalls {
		for _, allowed := range allowedSyscalls {
			if name == allowed {
				t.Errorf("%q is both denied and allowed", name)
			}
		}
	}
}

// seccompRun evaluates the box filter on one struct seccomp_data (arch,
// nr, args) in a userspace BPF machine and returns the filter's verdict.
// The kernel loads each 32-bit word in native order; the VM loads big
// endian, so each word is written big endian at its native offset.
func seccompRun(t *testing.T, vm *bpf.VM, auditArch uint32, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], nr)
	binary.BigEndian.PutUint32(data[4:], auditArch)
	for i, a := range args {
		off := 16 + 8*i
		binary.BigEndian.PutUint32(data[off:], uint32(a))       // low word first (little endian)
		binary.BigEndian.PutUint32(data[off+4:], uint32(a>>32)) // then the high word
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

// TestSeccompFilterVerdicts checks the filter's decisions without a kernel:
// foreign architectures and x32 never reach the allowlist, unknown calls
// are denied, setuid/setgid modes and unneeded socket families fail.
func TestSeccompFilterVerdicts(t *testing.T) {
	native, err := arch.GetInfo("")
	if err != nil || native.ID != arch.X86_64.ID {
		t.Skip("the verdict table is written for x86-64")
	}
	insts, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow    = 0x7fff0000
		errnoRet = 0x00050000
	)
	errno := func(e unix.Errno) uint32 { return errnoRet | uint32(e) }
	amd64 := uint32(arch.X86_64.ID)
	i386 := uint32(arch.I386.ID)
	for _, tc := range []struct {
		name string
		arch uint32
		nr   uint32
		args []uint64
		want uint32
	}{
		{"read", amd64, unix.SYS_READ, nil, allow},
		{"getpid", amd64, unix.SYS_GETPID, nil, allow},
		{"i386 getpid", i386, 20, nil, errno(unix.EPERM)},
		{"i386 keyctl", i386, 288, nil, errno(unix.EPERM)},
		{"i386 unshare", i386, 310, []uint64{unix.CLONE_NEWUSER}, errno(unix.EPERM)},
		{"i386 number of native read", i386, unix.SYS_READ, nil, errno(unix.EPERM)},
		{"arm on x86", uint32(arch.ARM.ID), unix.SYS_READ, nil, errno(unix.EPERM)},
		{"x32 getpid", amd64, 0x40000000 | unix.SYS_GETPID, nil, errno(unix.ENOSYS)},
		{"x32 keyctl", amd64, 0x40000000 | unix.SYS_KEYCTL, nil, errno(unix.ENOSYS)},
		{"unknown call", amd64, 1000, nil, errno(unix.EPERM)},
		{"clone3", amd64, unix.SYS_CLONE3, nil, errno(unix.ENOSYS)},
		{"keyctl", amd64, unix.SYS_KEYCTL, nil, errno(unix.EPERM)},
		{"io_uring_setup", amd64, unix.SYS_IO_URING_SETUP, nil, errno(unix.EPERM)},
		{"openat2", amd64, unix.SYS_OPENAT2, nil, errno(unix.ENOSYS)},
		{"clone thread", amd64, unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD}, allow},
		{"clone newuser", amd64, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER}, errno(unix.EPERM)},
		{"chmod 0755", amd64, unix.SYS_CHMOD, []uint64{0, 0o755}, allow},
		{"chmod 4755", amd64, unix.SYS_CHMOD, []uint64{0, 0o4755}, errno(unix.EPERM)},
		{"fchmod 2755", amd64, unix.SYS_FCHMOD, []uint64{3, 0o2755}, errno(unix.EPERM)},
		{"fchmodat 6755", amd64, unix.SYS_FCHMODAT, []uint64{0, 0, 0o6755}, errno(unix.EPERM)},
		{"fchmodat 1777", amd64, unix.SYS_FCHMODAT, []uint64{0, 0, 0o1777}, allow},
		{"openat O_CREAT 4755", amd64, unix.SYS_OPENAT, []uint64{0, 0, unix.O_CREAT, 0o4755}, errno(unix.EPERM)},
		{"openat O_CREAT 0644", amd64, unix.SYS_OPENAT, []uint64{0, 0, unix.O_CREAT, 0o644}, allow},
		{"open 2755", amd64, unix.SYS_OPEN, []uint64{0, unix.O_CREAT, 0o2755}, errno(unix.EPERM)},
		{"creat 4700", amd64, unix.SYS_CREAT, []uint64{0, 0o4700}, errno(unix.EPERM)},
		{"mknodat S_IFREG|S_ISUID", amd64, unix.SYS_MKNODAT, []uint64{0, 0, unix.S_IFREG | 0o4755}, errno(unix.EPERM)},
		{"socket unix", amd64, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, allow},
		{"socket inet6", amd64, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM}, allow},
		{"socket netlink route", amd64, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, allow},
		{"socket netlink audit", amd64, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, errno(unix.EAFNOSUPPORT)},
		{"socket vsock", amd64, unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, errno(unix.EAFNOSUPPORT)},
		{"socket vsock, high bits set", amd64, unix.SYS_SOCKET, []uint64{1<<32 | unix.AF_VSOCK, unix.SOCK_STREAM}, errno(unix.EAFNOSUPPORT)},
		{"socket unix, high bits set", amd64, unix.SYS_SOCKET, []uint64{1<<32 | unix.AF_UNIX, unix.SOCK_STREAM}, errno(unix.EAFNOSUPPORT)},
		{"socket packet", amd64, unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_RAW}, errno(unix.EAFNOSUPPORT)},
		{"socket alg", amd64, unix.SYS_SOCKET, []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET}, errno(unix.EAFNOSUPPORT)},
		{"socketpair inet", amd64, unix.SYS_SOCKETPAIR, []uint64{unix.AF_INET, unix.SOCK_STREAM}, errno(unix.EAFNOSUPPORT)},
		{"personality PER_LINUX", amd64, unix.SYS_PERSONALITY, []uint64{8}, allow},
		{"personality READ_IMPLIES_EXEC", amd64, unix.SYS_PERSONALITY, []uint64{0x0400000}, errno(unix.EPERM)},
	} {
		if got := seccompRun(t, vm, tc.arch, tc.nr, tc.args...); got != tc.want {
			t.Errorf("%s: filter returns %#x, want %#x", tc.name, got, tc.want)
		}
	}
}
