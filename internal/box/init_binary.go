package box

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hermes-go/hermes/internal/box/wire"
)

// InitBinaryName is the small box init program (cmd/hermes-box-init). The
// Manager runs it as every box's PID 1 when it sits beside the hermes
// binary; it links no provider SDK, TUI or database, so a box's init
// starts in a fraction of the time and memory the whole hermes binary
// takes (bench/README.md). Without it the Manager re-executes hermes with
// wire.InitArg, which runs the same initproc.InitMain.
const InitBinaryName = "hermes-box-init"

// FindInitBinary returns the hermes-box-init beside hermesExe (the
// directory of the hermes binary, links resolved). It is used only when it
// is a regular executable file owned by root or by hermesExe's owner and
// writable by nobody else: a box's init runs as root on the host before it
// enters the box. The error says why no separate init is used (missing,
// or which check failed); callers then fall back to hermesExe.
func FindInitBinary(hermesExe string) (string, error) {
	if hermesExe == "" {
		return "", errors.New("the hermes binary's path is unknown")
	}
	if resolved, err := filepath.EvalSymlinks(hermesExe); err == nil {
		hermesExe = resolved
	}
	var exeSt syscall.Stat_t
	if err := syscall.Stat(hermesExe, &exeSt); err != nil {
		return "", fmt.Errorf("stat %s: %w", hermesExe, err)
	}
	path := filepath.Join(filepath.Dir(hermesExe), InitBinaryName)
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s is missing", path)
		}
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return "", fmt.Errorf("%s is not a regular file", path)
	case st.Mode&0o111 == 0:
		return "", fmt.Errorf("%s is not executable (chmod 755 %s)", path, path)
	case st.Uid != 0 && st.Uid != exeSt.Uid:
		return "", fmt.Errorf("%s belongs to uid %d, not to root or the owner of %s (uid %d)", path, st.Uid, hermesExe, exeSt.Uid)
	case st.Mode&0o022 != 0:
		return "", fmt.Errorf("%s is writable by group or others (chmod go-w %s)", path, path)
	}
	return path, nil
}

// resolveInit sets opts.InitBinary and opts.InitArgs: an explicit
// InitBinary stays; else hermes-box-init beside Executable when
// FindInitBinary accepts it; else Executable itself. Either runs initproc.InitMain
// with the same arguments (wire.InitArg first), so no path of the box differs.
func resolveInit(opts *Options) {
	if len(opts.InitArgs) == 0 {
		opts.InitArgs = []string{wire.InitArg}
	}
	if opts.InitBinary != "" {
		return
	}
	if path, err := FindInitBinary(opts.Executable); err == nil {
		opts.InitBinary = path
		return
	}
	opts.InitBinary = opts.Executable
}
