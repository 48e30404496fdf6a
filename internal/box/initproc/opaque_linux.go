package initproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OpaqueXattr is the overlayfs xattr that makes an upper directory hide
// the lower one (trusted.*, or user.* with the userxattr mount option).
func OpaqueXattr(userNS bool) string {
	if userNS {
		return "user.overlay.opaque"
	}
	return "trusted.overlay.opaque"
}

// opaqueCacheName is the file in a persistent layer's root, beside upper
// and out of the box's sight, that records which host directories its
// upper already shows empty (EmptyAllInUpper).
const opaqueCacheName = "opaque-markers"

// EmptyAllInUpper makes every host directory of empty appear empty in the
// overlay whose upper is layerDir/upper (emptyInUpper). With cache (a
// persistent layer), a start that finds the same list recorded for the
// same upper directory (inode and birth time, so a restored or replaced
// upper never matches) skips the work: about 200 system calls, most of
// them journaled ext4 updates, on every start of the box. What the box
// does meanwhile cannot uncover a host directory: the overlay keeps the
// opaque xattr out of its reach, and a directory it removes and makes
// again is opaque too.
func EmptyAllInUpper(layerDir string, empty []string, userNS, cache bool) error {
	upper := filepath.Join(layerDir, "upper")
	cachePath := filepath.Join(layerDir, opaqueCacheName)
	key := ""
	if cache {
		key = opaqueCacheKey(upper, empty, userNS)
		if b, err := os.ReadFile(cachePath); key != "" && err == nil && string(b) == key {
			return nil
		}
	}
	um := newUpperMaker(upper, userNS)
	for _, p := range empty {
		if err := um.emptyInUpper(p); err != nil {
			return err
		}
	}
	if key != "" {
		os.WriteFile(cachePath, []byte(key), 0o600) // best effort: without it the next start does the work again
	}
	return nil
}

// opaqueCacheKey identifies the upper directory, the list of empty
// directories and which of them are real directories on the host now
// (RealDirs: emptyInUpper skips the others, so one that is missing or a
// symlink at one start and a directory at the next must be done again),
// or is "" when the file system does not report birth times.
func opaqueCacheKey(upper string, empty []string, userNS bool) string {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, upper, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return ""
	}
	return fmt.Sprintf("v2 ino=%d btime=%d.%09d userns=%t\n%s\nreal:\n%s\n", st.Ino, st.Btime.Sec, st.Btime.Nsec, userNS,
		strings.Join(empty, "\n"), strings.Join(RealDirs(empty), "\n"))
}

// upperMaker makes directories of an overlay's upper directory with the
// modes of host ones (emptyInUpper), remembering what it made so that it
// skips the system calls whose answer it knows: a directory it made has no
// entries but those it made in it, and the mode it asked for when the
// umask masks none of its bits.
type upperMaker struct {
	upper  string
	userNS bool
	umask  int // -1 when unknown: every new directory is chmod'ed
	made   map[string]bool
}

func newUpperMaker(upper string, userNS bool) *upperMaker {
	return &upperMaker{upper: upper, userNS: userNS, umask: processUmask(), made: map[string]bool{}}
}

// processUmask reads the process's umask from /proc/self/status (Linux
// 4.7+), or returns -1. umask(2) cannot read it without setting it, which
// would race with files other goroutines create.
func processUmask() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return int(n)
			}
		}
	}
	return -1
}

// emptyInUpper makes host directory p (of lower root "/") appear empty in
// the overlay whose upper directory is m.upper: it creates upper/p,
// copying the mode of each host directory on the way, and marks it
// opaque. The directories belong to this process's user (the box's root):
// copying the host owners would shut the box's processes, which have no
// CAP_DAC_OVERRIDE, out of a 0700 home above the workspace. Earlier writes of a persistent box under upper/p are kept. A
// p missing on the host is skipped.
func (m *upperMaker) emptyInUpper(p string) error {
	st, err := os.Lstat(p)
	if err != nil || !st.IsDir() {
		return nil
	}
	rel := strings.TrimPrefix(filepath.Clean(p), "/")
	cur, host := m.upper, "/"
	parentMade := false
	for _, part := range strings.Split(rel, "/") {
		cur, host = filepath.Join(cur, part), filepath.Join(host, part)
		if m.made[cur] {
			parentMade = true
			continue
		}
		if !parentMade { // in a directory this maker made, only what it made exists
			if ust, err := os.Lstat(cur); err == nil {
				if !ust.IsDir() {
					return nil // the box replaced it with a file: nothing of the host shows
				}
				continue
			}
		}
		hst := st
		if host != filepath.Clean(p) {
			if hst, err = os.Lstat(host); err != nil || !hst.IsDir() {
				return nil
			}
		}
		perm := hst.Mode().Perm()
		if err := os.Mkdir(cur, perm); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("hide %s: %w", p, err)
		}
		if m.umask < 0 || int(perm)&m.umask != 0 {
			os.Chmod(cur, perm) // Mkdir applied the umask
		}
		m.made[cur] = true
		parentMade = true
	}
	if err := unix.Lsetxattr(cur, OpaqueXattr(m.userNS), []byte("y"), 0); err != nil {
		return fmt.Errorf("hide %s: mark %s opaque: %w", p, cur, err)
	}
	return nil
}

// RealDirs returns the paths of dirs that are directories reached through
// no symlink on the host: emptyInUpper skips the others, so they may not
// show empty in the box and cannot vouch for what is under them.
//
// Each path is checked one component at a time, as filepath.EvalSymlinks
// would resolve it, and a parent shared by several paths (/var of
// /var/cache and /var/lib) is looked at once.
func RealDirs(dirs []string) []string {
	isReal := map[string]bool{"/": true}
	var real func(p string) bool
	real = func(p string) bool {
		if r, ok := isReal[p]; ok {
			return r
		}
		r := real(filepath.Dir(p))
		if r {
			st, err := os.Lstat(p)
			r = err == nil && st.IsDir()
		}
		isReal[p] = r
		return r
	}
	var out []string
	for _, d := range dirs {
		if filepath.IsAbs(d) && real(filepath.Clean(d)) {
			out = append(out, d)
		}
	}
	return out
}
