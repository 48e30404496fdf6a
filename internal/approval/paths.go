package approval

import (
	"path"

	"github.com/hermes-go/hermes/internal/protect"
	"slices"
	"strings"
)

// dirState is where a command runs: the candidate working directories (the
// terminal workdir, plus every directory a cd earlier in the command may
// have moved to) and whether they are all known. An empty directory means
// "the workspace, not known to the check": relative paths stay relative
// and are treated as harmless.
type dirState struct {
	dirs  []string
	known bool
}

// pathResolver turns path arguments into absolute, cleaned candidates.
type pathResolver struct {
	home, hermesHome string
	sensitive        []string // see sensitivePrefixes
	// workspace is Config.Cwd, cleaned ("" = unknown); protected are
	// terminal.protected_paths beneath it (protected.go).
	workspace string
	protected protect.Set
}

// placeholderHome stands for the home directory when it is not known, so
// that "~/.ssh" and "$HOME/.ssh" still name the same sensitive place.
const placeholderHome = "/home/.hermes-unknown-home"

func newPathResolver(home, hermesHome string) pathResolver {
	if home == "" {
		home = placeholderHome
	}
	home = path.Clean(home)
	if hermesHome == "" {
		hermesHome = path.Join(home, ".hermes")
	}
	r := pathResolver{home: home, hermesHome: path.Clean(hermesHome)}
	r.sensitive = r.sensitivePrefixes()
	return r
}

// resolve returns the absolute cleaned forms p may take in dirs ("~",
// "~root", "$HOME", "$HERMES_HOME", "$PWD" and "$TMPDIR" expanded, "//",
// "/./" and ".." removed). known is false when p holds a part computed at
// run time, or is relative to an unknown directory.
func (r pathResolver) resolve(p string, st dirState) (cands []string, known bool) {
	if p == "" {
		return nil, true
	}
	p = r.expand(p)
	if strings.Contains(p, "$") || isDynamic(p) {
		return nil, false
	}
	if strings.HasPrefix(p, "/") {
		return []string{path.Clean(p)}, true
	}
	if !st.known {
		return nil, false
	}
	for _, d := range st.dirs {
		if d == "" {
			cands = append(cands, path.Clean(p))
		} else {
			cands = append(cands, path.Join(d, p))
		}
	}
	return cands, true
}

// expand replaces the home and environment spellings at the start of p.
func (r pathResolver) expand(p string) string {
	if strings.HasPrefix(p, "~") {
		user, rest, _ := strings.Cut(p[1:], "/")
		switch user {
		case "":
			return r.home + "/" + rest
		case "root":
			return "/root/" + rest
		case "+", "-":
			return "$PWD/" + rest // resolved below only for ~+
		}
		return "/home/" + user + "/" + rest
	}
	for name, value := range map[string]string{"$HOME": r.home, "$HERMES_HOME": r.hermesHome, "$TMPDIR": "/tmp", "$XDG_CONFIG_HOME": path.Join(r.home, ".config")} {
		if rest, ok := strings.CutPrefix(p, name); ok && (rest == "" || rest[0] == '/') {
			p = value + rest
			break
		}
	}
	return strings.ReplaceAll(p, "$USER", path.Base(r.home))
}

// homeSensitive are the places under a home directory whose change runs
// code later or grants access: shell startup files, ssh keys, credentials.
var homeSensitive = []string{".ssh", ".hermes", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".config/fish", ".config/autostart", ".config/systemd", ".config/git", ".gitconfig", ".gnupg", ".aws", ".kube", ".docker", ".netrc", ".npmrc", ".pypirc", ".local/bin"}

// systemSensitive are the system places a write into needs approval.
var systemSensitive = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/sys", "/proc", "/var/spool/cron"}

// sensitivePrefixes lists every absolute sensitive place for this service.
func (r pathResolver) sensitivePrefixes() []string {
	out := slices.Clone(systemSensitive)
	for _, h := range []string{r.home, "/root"} {
		for _, s := range homeSensitive {
			out = append(out, path.Join(h, s))
		}
	}
	return append(out, r.hermesHome)
}

// isSensitive reports whether cleaned absolute path p (possibly a glob such
// as ~/.ss?/x) is, or may be, inside a sensitive place.
func (r pathResolver) isSensitive(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, s := range r.sensitive {
		if within(p, s) {
			return true
		}
	}
	return false
}

// holdsSensitive returns a sensitive place strictly inside cleaned
// absolute path p (possibly a glob): a tree copied, synced or extracted
// into p may overwrite it (cp -r dots/. ~/ replaces ~/.bashrc). "" if none.
func (r pathResolver) holdsSensitive(p string) string {
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	pc := strings.Split(strings.Trim(p, "/"), "/")
	if p == "/" {
		pc = nil
	}
	for _, s := range r.sensitive {
		sc := strings.Split(strings.Trim(s, "/"), "/")
		if len(sc) <= len(pc) {
			continue
		}
		inside := true
		for i, c := range pc {
			if ok, err := path.Match(c, sc[i]); !ok || err != nil {
				inside = false
				break
			}
		}
		if inside {
			return s
		}
	}
	return ""
}

// within reports whether p is prefix or inside it, matching glob components
// of p (*, ?, [...]) against prefix's components.
func within(p, prefix string) bool {
	if !strings.ContainsAny(p, "*?[") {
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	pc := strings.Split(strings.Trim(p, "/"), "/")
	sc := strings.Split(strings.Trim(prefix, "/"), "/")
	if len(pc) < len(sc) {
		return false
	}
	for i, s := range sc {
		if ok, err := path.Match(pc[i], s); !ok || err != nil {
			return false
		}
	}
	return true
}

// systemDirs are the top-level directories whose recursive removal leaves
// the machine unusable; with "/" and the home directory they are the
// hardline rm/chmod/chown/find/mv targets.
var systemDirs = []string{"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "opt", "proc", "root", "sbin", "srv", "sys", "usr", "var"}

// isCritical reports whether a path argument names /, a top-level system
// directory or the home directory, in any spelling ("//", "/./etc",
// "~root/../", "$HOME//", "/e?c", a trailing "/*"), after resolving it in st.
func (r pathResolver) isCritical(arg string, st dirState) bool {
	switch strings.TrimRight(arg, "/") {
	case "", "~", "$HOME", "*", "~root", "/*", ".*", "~/*", "$HOME/*":
		if strings.TrimSpace(arg) != "" {
			return true
		}
	}
	cands, _ := r.resolve(arg, st)
	for _, c := range cands {
		for {
			t := strings.TrimSuffix(strings.TrimSuffix(c, "/*"), "/.*")
			if t == c {
				break
			}
			c = t
		}
		if c == "" || c == "/" || c == r.home || c == "/root" {
			return true
		}
		if !strings.HasPrefix(c, "/") || strings.Count(c, "/") != 1 {
			continue
		}
		for _, d := range systemDirs {
			if ok, _ := path.Match(c[1:], d); ok {
				return true
			}
		}
		if home := strings.TrimPrefix(r.home, "/"); !strings.Contains(home, "/") {
			if ok, _ := path.Match(c[1:], home); ok {
				return true
			}
		}
	}
	return false
}

// diskNames are sample names of block devices holding filesystems; a /dev
// glob matching one of them is taken for a disk.
var diskNames = []string{"sda", "sda1", "nvme0n1", "nvme0n1p1", "vda", "vda1", "xvda", "hda", "mmcblk0", "mmcblk0p1", "dm-0", "md0", "root"}

// isDisk reports whether cleaned path p is (or may be) a disk device.
func isDisk(p string) bool {
	if diskDevice().MatchString(p) {
		return true
	}
	if rest, ok := strings.CutPrefix(p, "/dev/"); ok && strings.ContainsAny(rest, "*?[") {
		for _, n := range diskNames {
			if m, _ := path.Match(rest, n); m {
				return true
			}
		}
	}
	return false
}

// harmlessDevices are device paths a command may write to freely.
func harmlessDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full", "/dev/random", "/dev/urandom":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/dev/shm/") || strings.HasPrefix(p, "/dev/pts/")
}
