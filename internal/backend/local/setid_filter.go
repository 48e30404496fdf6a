package local

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/syscalls"
)

// setIDModeCalls are the calls that take a file mode, with the index of
// the mode argument. A root command under the guard may not set S_ISUID
// or S_ISGID with them: Landlock does not govern chmod, and a setuid-root
// copy of a shell left in the workspace or /tmp would make every local
// user root. The box refuses the same modes (internal/box/initproc/seccomp_linux.go).
var setIDModeCalls = []struct {
	name string
	arg  uint32
}{
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"creat", 1}, {"open", 2},
	{"openat", 3}, {"mknod", 1}, {"mknodat", 2},
}

// setIDFilter is a seccomp program for the running architecture: foreign
// ABIs (i386 via int 0x80) and x32 calls fail, a setuid/setgid mode in a
// call of setIDModeCalls fails with EPERM, openat2 (whose mode the filter
// cannot read) with ENOSYS so libc falls back to openat, and every other
// call is allowed.
func setIDFilter() ([]bpf.Instruction, error) {
	info, err := syscalls.Native()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	errno := func(e unix.Errno) bpf.RetConstant { return bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(e)} }
	loadNr := bpf.LoadAbsolute{Off: 0, Size: 4}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: info.AuditArch, SkipTrue: 1},
		errno(unix.EPERM),
		loadNr,
	}
	if info.X32Mask != 0 {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: info.X32Mask, SkipFalse: 1}, errno(unix.ENOSYS))
	}
	modeWord := uint32(0) // low word of a 64-bit argument in seccomp_data
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
		modeWord = 4
	}
	for _, c := range setIDModeCalls {
		nr, ok := info.Numbers[c.name]
		if !ok {
			continue
		}
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 4},
			bpf.LoadAbsolute{Off: 16 + 8*c.arg + modeWord, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.S_ISUID | unix.S_ISGID, SkipFalse: 1},
			errno(unix.EPERM),
			loadNr)
	}
	if nr, ok := info.Numbers["openat2"]; ok {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1}, errno(unix.ENOSYS))
	}
	return append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}), nil
}

// denySetIDModes installs setIDFilter on the calling thread only (no
// TSYNC); children forked from it inherit the filter. The caller must hold
// CAP_SYS_ADMIN or have set no_new_privs.
func denySetIDModes(raw []bpf.RawInstruction) error {
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("seccomp filter for setuid modes: %w", e)
	}
	return nil
}
