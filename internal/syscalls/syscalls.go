// Package syscalls names the Linux system calls of the architecture hermes
// is built for, for the seccomp filters of the box and of the local guard:
// the audit architecture a filter checks first, and the number of each
// call by its kernel name. The tables are generated from golang.org/x/sys
// (gen.sh) and built on first use: nothing is paid at start-up, where
// go-seccomp-bpf's arch package built every architecture's tables.
package syscalls

import (
	"fmt"
	"runtime"
	"sync"
)

// Table is the running architecture's seccomp view.
type Table struct {
	// AuditArch is seccomp_data.arch for native calls (AUDIT_ARCH_*).
	AuditArch uint32
	// X32Mask is set in the number of an x32 call on amd64
	// (__X32_SYSCALL_BIT), 0 on other architectures.
	X32Mask uint32
	// Numbers maps a kernel call name ("openat") to its number.
	Numbers map[string]int
}

var table = sync.OnceValues(func() (Table, error) {
	if auditArch == 0 {
		return Table{}, fmt.Errorf("no system call table for %s: seccomp filters support amd64 and arm64", runtime.GOARCH)
	}
	return Table{AuditArch: auditArch, X32Mask: x32Mask, Numbers: numbers()}, nil
})

// Native returns the table of the architecture hermes was built for; an
// error names an architecture without one.
func Native() (Table, error) { return table() }
