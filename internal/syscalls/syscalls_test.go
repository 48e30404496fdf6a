package syscalls

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// The tables give the numbers go-seccomp-bpf's did (the box and the local
// guard assembled their filters from those): every call both know has the
// same number, and the audit architecture and x32 bit are the same. A call
// only one of them knows is listed, not an error, so that a newer x/sys
// does not break the test; the filters skip names a table lacks.
func TestMatchesGoSeccompBPF(t *testing.T) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Skipf("go-seccomp-bpf has no table here: %v", err)
	}
	tab, err := Native()
	if err != nil {
		t.Fatal(err)
	}
	if tab.AuditArch != uint32(info.ID) {
		t.Errorf("audit arch %#x, go-seccomp-bpf %#x", tab.AuditArch, uint32(info.ID))
	}
	if info.ID == arch.X86_64.ID && tab.X32Mask != uint32(arch.X32.SeccompMask) {
		t.Errorf("x32 mask %#x, go-seccomp-bpf %#x", tab.X32Mask, arch.X32.SeccompMask)
	}
	var onlyTheirs []string
	for name, nr := range info.SyscallNames {
		ours, ok := tab.Numbers[name]
		if !ok {
			onlyTheirs = append(onlyTheirs, name)
			continue
		}
		if ours != nr {
			t.Errorf("%s: %d, go-seccomp-bpf %d", name, ours, nr)
		}
	}
	if len(onlyTheirs) > 0 {
		t.Logf("calls only go-seccomp-bpf names: %v", onlyTheirs)
	}
	if len(tab.Numbers) < 300 {
		t.Errorf("only %d calls in the table", len(tab.Numbers))
	}
}
