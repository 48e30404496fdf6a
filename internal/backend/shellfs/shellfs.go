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
	"sort"
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

// ReadDirCommand lists dir's entries (dot files too) as NUL-terminated
// "size rawmode-hex mtime name" records, with stat over a glob so that
// BusyBox images work as well as GNU ones.
func ReadDirCommand(dir string) string {
	return `cd -- ` + Quote(dir) + ` && for f in * .[!.]* ..?*; do if [ -e "$f" ] || [ -L "$f" ]; then ` +
		`stat -L -c '%s %f %Y %n' -- "$f" 2>/dev/null || stat -c '%s %f %Y %n' -- "$f"; printf '\000'; fi; done`
}

// ParseReadDir parses ReadDirCommand's output for dir, sorted by name.
func ParseReadDir(dir, out string) ([]backend.FileInfo, error) {
	var list []backend.FileInfo
	for _, rec := range strings.Split(out, "\x00") {
		rec = strings.TrimSuffix(rec, "\n") // stat ends its line; the NUL ends the record
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, " ", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("list %s: unexpected entry %q", dir, rec)
		}
		fi, err := fileInfo(f[3], f[0], f[1], f[2], 16)
		if err != nil {
			return nil, err
		}
		list = append(list, fi)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

// WriteAtomicCommand reads stdin into a temporary file beside p, sets its
// mode (perm 0 means 0644) and renames it over p, creating p's directory.
func WriteAtomicCommand(p string, perm fs.FileMode) string {
	if perm == 0 {
		perm = 0o644
	}
	dir := path.Dir(p)
	return fmt.Sprintf(`mkdir -p -- %[1]s && t=$(mktemp -- %[1]s/.hermes-write-XXXXXX) && { cat > "$t" && chmod %[2]o "$t" && mv -f -- "$t" %[3]s || { rm -f -- "$t"; exit 1; }; }`,
		Quote(dir), perm.Perm(), Quote(p))
}

// SignalName names signal n as Go's syscall does ("SIGKILL"), for exit
// statuses 128+n that a remote shell reports.
func SignalName(n int) string {
	names := map[int]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}
	if s, ok := names[n]; ok {
		return s
	}
	return "SIG" + strconv.Itoa(n)
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

// KillGroupCommand sends sig (TERM, KILL) to process group pgid; the form
// (`kill -SIG -PGID`) is the one dash, bash and BusyBox all accept.
func KillGroupCommand(pgid int, sig string) string {
	return fmt.Sprintf("kill -%s -%d 2>/dev/null; true", sig, pgid)
}
