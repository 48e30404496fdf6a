package box

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// underAny reports whether p is one of dirs or inside one.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
