//go:build !linux || !(amd64 || arm64)

package syscalls

const (
	auditArch = 0
	x32Mask   = 0
)

func numbers() map[string]int { return nil }
