// Package shellfs builds and parses the POSIX shell programs that remote
// backends (ssh, vercel_sandbox) use for file operations where their
// protocol has no call of its own: quoting, stat and directory listings
// (GNU coreutils stat and findutils find, as on Debian, Ubuntu and
// Amazon Linux images).
package shellfs

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

// Quote returns s as one single-quoted POSIX shell word.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// StatCommand prints "size rawmode-hex mtime" of p, following symlinks.
func StatCommand(p string) string { return "stat -L -c '%s %f %Y' -- " + Quote(p) }

// ParseStat parses StatCommand's output for the file at p.
func ParseStat(p, out string) (backend.FileInfo, error) {
	f := strings.Fields(out)
	if len(f) != 3 {
		return backend.FileInfo{}, fmt.Errorf("stat %s: unexpected output %q", p, out)
	}
	return fileInfo(path.Base(p), f[0], f[1], f[2], 16)
}

// ReadDirCommand lists dir's entries as NUL-terminated records, sorted.
func ReadDirCommand(dir string) string {
	return `cd -- ` + Quote(dir) + ` && find . -mindepth 1 -maxdepth 1 -printf '%s %m %T@ %y %f\0' | sort -z`
}

// ParseReadDir parses ReadDirCommand's output for dir.
func ParseReadDir(dir, out string) ([]backend.FileInfo, error) {
	var list []backend.FileInfo
	for _, rec := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, " ", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("list %s: unexpected entry %q", dir, rec)
		}
		mode := f[1]
		if f[3] == "d" {
			mode = "d" + mode
		}
		fi, err := fileInfo(f[4], f[0], mode, strings.SplitN(f[2], ".", 2)[0], 8)
		if err != nil {
			return nil, err
		}
		list = append(list, fi)
	}
	return list, nil
}

// fileInfo parses size, mode (raw st_mode in base modeBase, or "d"+octal
// permissions from find) and mtime in seconds.
func fileInfo(name, size, mode, mtime string, modeBase int) (backend.FileInfo, error) {
	n, err1 := strconv.ParseInt(size, 10, 64)
	sec, err2 := strconv.ParseInt(mtime, 10, 64)
	isDir := strings.HasPrefix(mode, "d")
	raw, err3 := strconv.ParseUint(strings.TrimPrefix(mode, "d"), modeBase, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return backend.FileInfo{}, fmt.Errorf("unexpected file listing for %s: %q %q %q", name, size, mode, mtime)
	}
	if modeBase == 16 {
		isDir = raw&0o170000 == 0o040000
	}
	m := fs.FileMode(raw & 0o777)
	if isDir {
		m |= fs.ModeDir
	}
	return backend.FileInfo{Name: name, Size: n, Mode: m, ModTime: time.Unix(sec, 0), IsDir: isDir}, nil
}

// KillTreeCommand sends sig (TERM, KILL) to pid and all its descendants,
// children first found with pgrep -P (procps).
func KillTreeCommand(pid int, sig string) string {
	return fmt.Sprintf(`k(){ for c in $(pgrep -P "$1" 2>/dev/null); do k "$c"; done; kill -%s "$1" 2>/dev/null; }; k %d; true`, sig, pid)
}
