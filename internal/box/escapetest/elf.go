// Package escapetest builds the tiny static programs the box's escape
// tests run inside a box: each makes one raw system call through a chosen
// ABI and exits with the call's negated result, so a test reads the errno
// (or a success) from the exit status without needing a compiler, a
// 32-bit libc or gcc-multilib on the machine.
package escapetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
)

// ABI is the system call entry a Call uses on x86-64.
type ABI int

const (
	// Native is the x86-64 `syscall` instruction.
	Native ABI = iota
	// I386 is `int 0x80` from a 64-bit process: the kernel runs the call
	// from its i386 table and seccomp sees AUDIT_ARCH_I386.
	I386
	// X32 is `syscall` with the x32 bit (0x40000000) set in the number.
	X32
)

// X32Bit is the bit that marks an x32 system call number.
const X32Bit = 0x40000000

// Call is one system call: Nr in the ABI's own table, up to four 32-bit
// arguments (sign-extended values such as AT_FDCWD are given as their
// low 32 bits). When Str is not empty it is placed in the program and its
// address replaces argument StrArg.
type Call struct {
	ABI    ABI
	Nr     uint32
	Args   [4]uint32
	Str    string
	StrArg int
}

// Exit status of a Call program: (-result) & 0xff. Helpers for the usual
// outcomes.
const (
	ExitOK           = 0
	ExitEPERM        = 1
	ExitENOSYS       = 38
	ExitEAFNOSUPPORT = 97
)

const loadAddr = 0x400000
const headersSize = 64 + 56 // ELF64 header + one program header

// ELF returns a static x86-64 ELF executable that makes c and exits with
// (-result) & 0xff.
func ELF(c Call) []byte {
	var code []byte
	mov := func(op []byte, v uint32) {
		code = append(code, op...)
		code = binary.LittleEndian.AppendUint32(code, v)
	}
	args := c.Args
	// The string's address is known once the code's length is: every
	// instruction below has a fixed size, so lay out twice.
	for pass := 0; pass < 2; pass++ {
		code = code[:0]
		nr := c.Nr
		if c.ABI == X32 {
			nr |= X32Bit
		}
		mov([]byte{0xb8}, nr) // mov eax, nr
		if c.ABI == I386 {
			mov([]byte{0xbb}, args[0])      // mov ebx
			mov([]byte{0xb9}, args[1])      // mov ecx
			mov([]byte{0xba}, args[2])      // mov edx
			mov([]byte{0xbe}, args[3])      // mov esi
			code = append(code, 0xcd, 0x80) // int 0x80
		} else {
			mov([]byte{0xbf}, args[0])       // mov edi
			mov([]byte{0xbe}, args[1])       // mov esi
			mov([]byte{0xba}, args[2])       // mov edx
			mov([]byte{0x41, 0xba}, args[3]) // mov r10d
			code = append(code, 0x0f, 0x05)  // syscall
		}
		code = append(code, 0x89, 0xc7, 0xf7, 0xdf) // mov edi, eax; neg edi
		mov([]byte{0xb8}, 60)                       // mov eax, SYS_exit
		code = append(code, 0x0f, 0x05)             // syscall
		if c.Str != "" {
			args[c.StrArg] = uint32(loadAddr + headersSize + len(code))
		}
	}
	code = append(code, c.Str...)
	code = append(code, 0)
	b := make([]byte, headersSize)
	copy(b, "\x7fELF\x02\x01\x01")
	le := binary.LittleEndian
	le.PutUint16(b[16:], 2)  // ET_EXEC
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], loadAddr+headersSize) // entry
	le.PutUint64(b[32:], 64)                   // program headers
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[54:], 56)
	le.PutUint16(b[56:], 1)
	p := b[64:]
	le.PutUint32(p[0:], 1) // PT_LOAD
	le.PutUint32(p[4:], 5) // R+X
	le.PutUint64(p[16:], loadAddr)
	le.PutUint64(p[24:], loadAddr)
	size := uint64(headersSize + len(code))
	le.PutUint64(p[32:], size)
	le.PutUint64(p[40:], size)
	le.PutUint64(p[48:], 0x1000)
	return append(b, code...)
}

// Supported reports whether ELF programs run on this machine (x86-64).
func Supported() bool { return runtime.GOARCH == "amd64" && runtime.GOOS == "linux" }

// I386Works runs an i386 getpid on the host from a program written in dir
// and returns an error when the kernel refuses the i386 entry point
// (a kernel without CONFIG_IA32_EMULATION, or ia32_emulation=0).
func I386Works(dir string) error {
	p := filepath.Join(dir, "i386-getpid")
	if err := os.WriteFile(p, ELF(Call{ABI: I386, Nr: 20}), 0o755); err != nil {
		return err
	}
	err := exec.Command(p).Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == ExitENOSYS {
		return errors.New("int 0x80 returns ENOSYS")
	}
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	if ee != nil && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		return fmt.Errorf("int 0x80 killed the program: %v", err)
	}
	return nil
}
