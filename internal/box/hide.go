package box

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Host mode (terminal.box_image: host) shows the host's root file system,
// read-only, as the box's base, and of it only what a toolchain needs
// ("only what is needed", not "everything but a denylist": the box runs
// as root, which reads every root-only file it can see):
//
//   - visible: /usr, /bin, /sbin, /lib*, /etc, /opt, /nix (hostVisible),
//     and of /var only the package manager's state and caches
//     (hostVisibleVar: dpkg, apt, ucf, debconf), so that dpkg -l, apt-get
//     and compilers work;
//   - every other directory of "/" and /var (/root, /home, /srv, /mnt,
//     /media, /boot, /var/log, /var/backups, /var/mail, /var/spool,
//     /var/lib/docker, /var/lib/cloud...) appears empty: an opaque
//     directory in the box's writable layer (overlayfs "opaque" xattr,
//     kernel docs filesystems/overlayfs), so the box can still write there
//     and a persistent box keeps those writes; other regular files there
//     (/swapfile, /var/lib/*.state) are covered by /dev/null. /proc, /dev,
//     /sys, /tmp, /run and /var/tmp get the box's own file systems;
//   - the homes of users (the invoking user's $HOME and the login users
//     of /etc/passwd) appear empty wherever they are;
//   - credential files in what stays visible (hostCredentialFiles) and,
//     wherever a home does stay visible (the workspace is a home, or
//     inside one), its credential files (homeCredentialNames) are covered:
//     a file by /dev/null, a directory by an empty read-only tmpfs;
//   - HERMES_HOME is covered the same way, in every mode.
//
// The workspace is mounted after the directories are emptied and before
// anything is covered, so a workspace inside an emptied directory or a
// home stays at its path, readable and writable.

// hostVisible are the directories of the host's "/" a host-mode box sees.
var hostVisible = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix"}

// hostVisibleVar are the parts of the host's /var a host-mode box sees:
// the package manager's database, lists and caches.
var hostVisibleVar = []string{"/var/lib/dpkg", "/var/lib/apt", "/var/lib/ucf", "/var/cache/apt",
	"/var/cache/debconf", "/var/cache/ldconfig"}

// hostOwnMounts are host directories the box mounts its own file systems
// on (or, for /sys, leaves as the empty mount point it is on disk).
var hostOwnMounts = []string{"/proc", "/dev", "/sys", "/tmp", "/run", "/var/tmp"}

// hostCredentialFiles are host paths (globs) holding secrets: password
// hashes, SSH host keys, TLS private keys, Kerberos keytabs, network and VPN
// secrets, the backups Debian keeps of the shadow files.
var hostCredentialFiles = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd",
	"/var/backups/*shadow*", "/etc/ssh/ssh_host_*_key", "/etc/ssl/private", "/etc/pki/tls/private",
	"/etc/letsencrypt", "/etc/krb5.keytab", "/etc/NetworkManager/system-connections", "/etc/wireguard",
	"/etc/ipsec.secrets", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets", "/etc/docker/key.json",
	"/var/lib/sss/secrets", "/var/cache/debconf/passwords.dat*", "/etc/kubernetes", "/etc/rancher",
	"/etc/credstore", "/etc/credstore.encrypted", "/etc/netplan", "/etc/wpa_supplicant", "/etc/openvpn",
	"/etc/postfix/sasl_passwd*", "/etc/exim4/passwd.client", "/etc/mysql/debian.cnf",
}

// homeCredentialNames are per-user credential files and directories,
// relative to a home directory (SSH, GnuPG, cloud CLIs, Kubernetes, Docker,
// git, package registries, databases, Vault, hermes's own home).
var homeCredentialNames = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc",
	".git-credentials", ".config/git/credentials", ".npmrc", ".pypirc", ".config/gh", ".config/hub",
	".pgpass", ".my.cnf", ".vault-token", ".terraform.d", ".local/share/keyrings", ".password-store",
	".hermes",
}

// isHostBase reports whether lower is host mode's base (the host's "/").
func isHostBase(lower []string) bool { return len(lower) == 1 && filepath.Clean(lower[0]) == "/" }

// userHome is the invoking user's home directory (Options.UserHome, else
// $HOME), absolute and with symlinks resolved; "" if unknown or "/".
func (m *Manager) userHome() string {
	h := m.opts.UserHome
	if h == "" {
		h, _ = os.UserHomeDir()
	}
	if h == "" {
		return ""
	}
	h, err := filepath.Abs(h)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(h); err == nil {
		h = real
	}
	if h == "/" {
		return ""
	}
	return h
}

// loginHomes lists the home directories of login users (uid 1000–65533)
// in passwdFile.
func loginHomes(passwdFile string) []string {
	f, err := os.Open(passwdFile)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// name:password:uid:gid:gecos:home:shell
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 7 {
			continue
		}
		uid, err := strconv.Atoi(fields[2])
		home := filepath.Clean(fields[5])
		if err != nil || uid < 1000 || uid >= 65534 || !filepath.IsAbs(home) || home == "/" {
			continue
		}
		out = append(out, home)
	}
	return out
}

// privateHostPaths returns, for a box on lower, the directories to show
// empty (host mode only) and the paths to cover (HERMES_HOME always; in
// host mode the files outside what stays visible and the credential files
// too). Paths are absolute host paths.
func (m *Manager) privateHostPaths(lower []string) (empty, hide []string) {
	hide = m.hiddenPaths()
	if !isHostBase(lower) {
		return nil, hide
	}
	empty, files := hostOutsideVisible("/", append(append([]string{}, hostVisible...), hostVisibleVar...), hostOwnMounts)
	hide = append(hide, files...)
	homes := []string{"/root", "/home"}
	if h := m.userHome(); h != "" {
		homes = append(homes, h)
	}
	homes = append(homes, loginHomes("/etc/passwd")...)
	for _, h := range homes {
		if !underAny(h, empty) {
			empty = append(empty, h)
		}
	}
	for _, pattern := range hostCredentialFiles {
		matches, _ := filepath.Glob(pattern)
		hide = append(hide, matches...)
	}
	visibleHomes := append([]string{}, homes...)
	if more, _ := filepath.Glob("/home/*"); len(more) > 0 {
		visibleHomes = append(visibleHomes, more...)
	}
	for _, h := range visibleHomes {
		for _, name := range homeCredentialNames {
			hide = append(hide, filepath.Join(h, name))
		}
	}
	return empty, hide
}

// hostOutsideVisible walks host directory dir and returns the directories
// (dirs) and regular files (files) in it that are neither in visible nor
// in own, descending into those that contain a visible path. Symlinks are
// skipped: what they point to is judged at its own path.
func hostOutsideVisible(dir string, visible, own []string) (dirs, files []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case slices.Contains(visible, p) || slices.Contains(own, p):
		case e.Type()&fs.ModeSymlink != 0:
		case e.IsDir() && containsUnder(visible, p):
			d, f := hostOutsideVisible(p, visible, own)
			dirs, files = append(dirs, d...), append(files, f...)
		case e.IsDir():
			dirs = append(dirs, p)
		case e.Type().IsRegular():
			files = append(files, p)
		}
	}
	return dirs, files
}

// containsUnder reports whether one of paths lies inside dir.
func containsUnder(paths []string, dir string) bool {
	for _, p := range paths {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// pruneHidden returns hide without repeats and without the paths under a
// directory of empty (shown empty in the box: nothing of the host below
// it is visible, so covering it again only costs the init a lookup),
// except those under the workspace, which the box sees through its own
// mount whatever the layer shows. Order is kept.
func pruneHidden(hide, empty []string, workspace string) []string {
	seen := make(map[string]bool, len(hide))
	out := make([]string, 0, len(hide))
	for _, p := range hide {
		p = filepath.Clean(p)
		if seen[p] {
			continue
		}
		seen[p] = true
		if underAny(p, empty) && (workspace == "" || !underAny(p, []string{workspace}) && !underAny(workspace, []string{p})) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// realDirs returns the paths of dirs that are directories reached through
// no symlink on the host: emptyInUpper skips the others, so they may not
// show empty in the box and cannot vouch for what is under them.
//
// Each path is checked one component at a time, as filepath.EvalSymlinks
// would resolve it, and a parent shared by several paths (/var of
// /var/cache and /var/lib) is looked at once.
func realDirs(dirs []string) []string {
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

// underAny reports whether p is one of dirs or inside one.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// opaqueXattr is the overlayfs xattr that makes an upper directory hide
// the lower one (trusted.*, or user.* with the userxattr mount option).
func opaqueXattr(userNS bool) string {
	if userNS {
		return "user.overlay.opaque"
	}
	return "trusted.overlay.opaque"
}

// opaqueCacheName is the file in a persistent layer's root, beside upper
// and out of the box's sight, that records which host directories its
// upper already shows empty (emptyAllInUpper).
const opaqueCacheName = "opaque-markers"

// emptyAllInUpper makes every host directory of empty appear empty in the
// overlay whose upper is layerDir/upper (emptyInUpper). With cache (a
// persistent layer), a start that finds the same list recorded for the
// same upper directory (inode and birth time, so a restored or replaced
// upper never matches) skips the work: about 200 system calls, most of
// them journaled ext4 updates, on every start of the box. What the box
// does meanwhile cannot uncover a host directory: the overlay keeps the
// opaque xattr out of its reach, and a directory it removes and makes
// again is opaque too.
func emptyAllInUpper(layerDir string, empty []string, userNS, cache bool) error {
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
// (realDirs: emptyInUpper skips the others, so one that is missing or a
// symlink at one start and a directory at the next must be done again),
// or is "" when the file system does not report birth times.
func opaqueCacheKey(upper string, empty []string, userNS bool) string {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, upper, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return ""
	}
	return fmt.Sprintf("v2 ino=%d btime=%d.%09d userns=%t\n%s\nreal:\n%s\n", st.Ino, st.Btime.Sec, st.Btime.Nsec, userNS,
		strings.Join(empty, "\n"), strings.Join(realDirs(empty), "\n"))
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
	if err := unix.Lsetxattr(cur, opaqueXattr(m.userNS), []byte("y"), 0); err != nil {
		return fmt.Errorf("hide %s: mark %s opaque: %w", p, cur, err)
	}
	return nil
}
