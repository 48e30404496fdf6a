package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/protect"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Sandbox is terminal.local_sandbox: how the kernel confines the commands
// of the local backend (issue 15, modelled on Codex's sandbox modes).
type Sandbox string

// The values of terminal.local_sandbox.
const (
	// SandboxWorkspaceWrite (the default): read everywhere except
	// HERMES_HOME's secrets; write only the workspace, the temp dir,
	// terminal.writable_paths and /dev/null-like devices; never HERMES_HOME.
	SandboxWorkspaceWrite Sandbox = "workspace-write"
	// SandboxReadOnly: read as above, write nowhere but the devices.
	SandboxReadOnly Sandbox = "read-only"
	// SandboxOff: no Landlock ruleset; the approvals are the only guard.
	SandboxOff Sandbox = "off"
)

// Landlock filesystem rights, grouped as the guard grants them.
const (
	fileRead  = ll.AccessFSExecute | ll.AccessFSReadFile
	dirRead   = ll.AccessFSReadDir
	readRight = fileRead | dirRead
	fileWrite = ll.AccessFSWriteFile | ll.AccessFSTruncate
	dirWrite  = ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
		ll.AccessFSMakeSym | ll.AccessFSRefer
	writeRight = readRight | fileWrite | dirWrite
	// fileOnly are the rights a rule on a non-directory may carry.
	fileOnly = fileRead | fileWrite | ll.AccessFSIoctlDev
	// deviceRight is what the /dev/null-like devices get.
	deviceRight = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// devices are the character devices every command may read and write
// (and ioctl: terminals), whatever the mode.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// handledRights returns the rights a ruleset handles on Landlock ABI abi:
// ABI 1 has execute..make_sym, 2 adds refer, 3 truncate, 5 ioctl_dev.
// LANDLOCK_ACCESS_FS_RESOLVE_UNIX is not handled, so commands may still
// connect to named sockets (ssh-agent, docker).
func handledRights(abi int) uint64 {
	h := uint64(ll.AccessFSMakeSym<<1 - 1)
	if abi >= 2 {
		h |= ll.AccessFSRefer
	}
	if abi >= 3 {
		h |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		h |= ll.AccessFSIoctlDev
	}
	return h
}

// IsProtectedName reports whether name, an entry directly in HERMES_HOME,
// is one that no tool process may read: the API keys (.env, .env.*), the
// credential stores (secrets/, auth.json, mcp-tokens/, pairing/) and the
// session database (state.db and its -wal/-shm/-journal files).
func IsProtectedName(name string) bool {
	switch name {
	case ".env", "secrets", "auth.json", "mcp-tokens", "pairing":
		return true
	}
	return strings.HasPrefix(name, ".env.") || strings.HasPrefix(name, "state.db")
}

// guard confines the commands of one backend with Landlock. The ruleset
// is built once and brought up to date when a directory it enumerated
// changes (its modification time moves), so it stays cheap per command.
type guard struct {
	mode       Sandbox
	abi        int      // Landlock ABI of the kernel; 0 = none
	hermesHome string   // symlinks resolved; "" = none
	writable   []string // workspace, temp dir, terminal.writable_paths (resolved)

	mu     sync.Mutex
	fd     int        // cached ruleset; -1 = none built
	stamps []dirStamp // directories enumerated into the cached ruleset
	stat   func(string) (unix.Stat_t, error)

	setID []bpf.RawInstruction // seccomp filter refusing setuid/setgid modes (root only); nil = none

	// protected are terminal.protected_paths beneath workspace; when
	// protectMounts, each command gets them read-only (protected.go).
	protected     protect.Set
	workspace     string
	protectMounts bool
	// watch: what the workspace held when the backend started; after
	// each command what is new and makes the host run code is moved
	// aside (protected_git.go).
	watch *protect.Watch
	// pids: the commands' PID namespace with its own /proc (pidns.go);
	// nil when not root or no keeper binary is configured.
	pids *pidKeeper
}

// dirStamp is a directory enumerated into the ruleset: its identity and
// change time then, the rights its entries got and the names it had.
type dirStamp struct {
	path   string
	mtim   unix.Timespec
	ino    uint64
	access uint64
	names  map[string]bool
}

// LandlockABI returns the kernel's Landlock ABI version, or an error when
// Landlock is missing or disabled (landlock_create_ruleset(2) with
// LANDLOCK_CREATE_RULESET_VERSION).
func LandlockABI() (int, error) { return ll.LandlockGetABIVersion() }

// landlockABI returns the kernel's Landlock ABI version, 0 when Landlock
// is missing or disabled.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// newGuard prepares the guard of mode; workspace and extra are the
// writable directories. It does not touch the kernel beyond asking the
// Landlock ABI.
func newGuard(mode Sandbox, abi int, hermesHome string, writable []string) *guard {
	g := &guard{mode: mode, abi: abi, fd: -1, stat: lstatNoFollow}
	if hermesHome != "" {
		g.hermesHome = realPath(hermesHome)
	}
	if mode == SandboxWorkspaceWrite {
		for _, w := range writable {
			if w != "" {
				g.writable = append(g.writable, realPath(w))
			}
		}
	}
	if mode != SandboxOff && os.Geteuid() == 0 {
		// Root commands could leave setuid-root files where Landlock lets
		// them write; refuse the modes (see setIDFilter). An assembly
		// failure leaves the filter off, as on a kernel without seccomp.
		if insts, err := setIDFilter(); err == nil {
			g.setID, _ = bpf.Assemble(insts)
		}
	}
	return g
}

// active reports whether commands run under a Landlock ruleset.
func (g *guard) active() bool { return g.mode != SandboxOff && g.abi > 0 }

func lstatNoFollow(p string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Lstat(p, &st)
	return st, err
}

// realPath resolves every symlink of p (an absolute path); a path that does
// not exist stays as it is, cleaned.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// ruleset returns a duplicate of the current ruleset descriptor, building
// it first when needed; the caller closes it. When an enumerated directory
// changed, its new entries are added to the ruleset (rules already in it
// stay: they name inodes, which a rename does not change); when HERMES_HOME
// itself changed, the ruleset is built anew, so that an entry renamed to a
// protected name there loses its grant.
func (g *guard) ruleset() (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fd >= 0 && !g.refresh() {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
	if g.fd < 0 {
		fd, stamps, err := g.build()
		if err != nil {
			return -1, err
		}
		g.fd, g.stamps = fd, stamps
	}
	return unix.FcntlInt(uintptr(g.fd), unix.F_DUPFD_CLOEXEC, 0)
}

// refresh brings the cached ruleset up to date with the enumerated
// directories, adding rules for new entries; it returns false when the
// ruleset must be built anew.
func (g *guard) refresh() bool {
	for i := range g.stamps {
		st := &g.stamps[i]
		now, err := g.stat(st.path)
		if err == nil && now.Mtim == st.mtim && now.Ino == st.ino {
			continue
		}
		if err != nil || now.Ino != st.ino || st.path == g.hermesHome {
			return false
		}
		entries, err := os.ReadDir(st.path)
		if err != nil {
			return false
		}
		rb := &rules{fd: g.fd, handled: handledRights(g.abi), hole: g.hermesHome, stat: g.stat}
		for _, e := range entries {
			child := filepath.Join(st.path, e.Name())
			if !st.names[e.Name()] && !within(g.hermesHome, child) {
				rb.add(child, st.access, false)
			}
			st.names[e.Name()] = true
		}
		if rb.err != nil {
			return false
		}
		st.mtim = now.Mtim
	}
	return true
}

// close releases the cached ruleset.
func (g *guard) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
}

// build creates the ruleset: read access to "/" except HERMES_HOME's
// protected entries (Landlock only allows, so every ancestor of
// HERMES_HOME is enumerated and each sibling granted on its own), write
// access to the writable roots except HERMES_HOME, and the devices.
func (g *guard) build() (int, []dirStamp, error) {
	if g.mode != SandboxOff && g.hermesHome != "" {
		detachHardLinks(g.hermesHome)
	}
	handled := handledRights(g.abi)
	fd, err := ll.LandlockCreateRuleset(&ll.RulesetAttr{HandledAccessFS: handled}, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	rb := &rules{fd: fd, handled: handled, hole: g.hermesHome, stat: g.stat}
	rb.tree("/", readRight, func(name string) bool { return !IsProtectedName(name) })
	for _, w := range g.writable {
		if g.hermesHome != "" && within(w, g.hermesHome) {
			continue // a writable path inside HERMES_HOME stays read-only
		}
		rb.tree(w, writeRight, nil)
	}
	rb.add("/dev", ll.AccessFSIoctlDev, true)
	for _, d := range devices {
		rb.add(d, deviceRight, true)
	}
	rb.add("/dev/pts", deviceRight, true)
	if g.mode == SandboxWorkspaceWrite {
		rb.add("/dev/shm", writeRight|ll.AccessFSIoctlDev, true)
	}
	if rb.err != nil {
		_ = unix.Close(fd)
		return -1, nil, rb.err
	}
	return fd, rb.stamps, nil
}

// detachHardLinks gives every regular file directly in HERMES_HOME that
// has other hard links (made earlier, e.g. by a command run with
// local_sandbox off) a fresh inode with the same content and mode, so the
// other names keep the old inode and no longer reach config.yaml, .env or
// auth.json (for the protected names, the old inode is also emptied, so
// the links keep no key): Landlock decides by the path a command opens, and a link
// outside HERMES_HOME would otherwise be read and written freely. The
// SQLite files (state.db*) are left alone: hermes may have them open.
// Errors leave the file as it was.
func detachHardLinks(home string) {
	dirfd, err := unix.Open(home, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(dirfd)
	entries, err := os.ReadDir(home)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, "state.db") {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Nlink < 2 || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		f := os.NewFile(uintptr(fd), name)
		data, err := io.ReadAll(f)
		if err == nil && replaceAt(dirfd, name, data, fs.FileMode(st.Mode&0o777)) == nil && IsProtectedName(name) {
			_ = f.Truncate(0) // the old inode, still reachable elsewhere, keeps no key
		}
		_ = f.Close()
	}
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// rules accumulates path-beneath rules into a ruleset. hole is the
// directory whose own content is special (HERMES_HOME).
type rules struct {
	fd      int
	handled uint64
	hole    string
	stat    func(string) (unix.Stat_t, error)
	stamps  []dirStamp
	err     error
}

// tree grants access to dir and everything below it, except the hole:
// when the hole is dir or below it, dir gets only the right to list it,
// its entries are granted one by one (recursing towards the hole), and in
// the hole only the entries keep accepts are granted (keep nil: none).
func (r *rules) tree(dir string, access uint64, keep func(string) bool) {
	if r.hole == "" || !within(r.hole, dir) {
		r.add(dir, access, true)
		return
	}
	r.add(dir, access&dirRead, true)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // unreadable: nothing below it is granted
	}
	if st, err := r.stat(dir); err == nil {
		names := make(map[string]bool, len(entries))
		for _, e := range entries {
			names[e.Name()] = true
		}
		r.stamps = append(r.stamps, dirStamp{path: dir, mtim: st.Mtim, ino: st.Ino, access: access, names: names})
	}
	for _, e := range entries {
		child := filepath.Join(dir, e.Name())
		switch {
		case dir == r.hole:
			if keep != nil && keep(e.Name()) {
				r.add(child, access, false)
			}
		case within(r.hole, child):
			r.tree(child, access, keep)
		default:
			r.add(child, access, false)
		}
	}
}

// add grants access beneath path. follow says whether a symlink at path
// is followed (configured roots) or skipped (enumerated entries: what it
// points to is reached through its own location's rules). Missing paths
// are skipped; rights the ruleset does not handle are dropped.
func (r *rules) add(path string, access uint64, follow bool) {
	flags := unix.O_PATH | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return
	case unix.S_IFDIR:
	default:
		access &= fileOnly
	}
	access &= r.handled
	if access == 0 {
		return
	}
	attr := ll.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}
	if err := ll.LandlockAddPathBeneathRule(r.fd, &attr, 0); err != nil && r.err == nil {
		r.err = fmt.Errorf("landlock rule for %s: %w", path, err)
	}
}

// start starts cmd confined by the guard, from a dedicated OS thread: the
// thread drops CAP_SYS_PTRACE (in every mode) and restricts itself (Landlock applies per thread, and the child
// inherits it across fork and exec) and stays alive until release is
// called, because the child's parent-death signal fires when the thread
// that forked it exits. Call release once the command has exited.
func (g *guard) start(cmd *exec.Cmd) (release func(), err error) {
	fd := -1
	if g.active() {
		if fd, err = g.ruleset(); err != nil {
			return nil, err
		}
	}
	if g.pids != nil && cmd.SysProcAttr != nil {
		// Go's child checks getppid() after setting the parent-death
		// signal and kills itself when it changed; in the commands' PID
		// namespace the parent is outside, so getppid() is 0. The
		// supervisor still ends the command's group when hermes dies.
		cmd.SysProcAttr.Pdeathsig = 0
	}
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		// Never unlocked: the goroutine's exit ends this thread, so its
		// Landlock domain is never reused for other goroutines.
		runtime.LockOSThread()
		if g.protectMounts {
			if err := g.mountProtected(); err != nil {
				started <- err
				return
			}
		}
		if g.pids != nil {
			if err := g.enterPIDNamespace(); err != nil {
				started <- err
				return
			}
		}
		if err := dropPtraceCapability(); err != nil {
			started <- err
			return
		}
		if fd >= 0 {
			err := restrictThread(fd)
			_ = unix.Close(fd)
			if err != nil {
				started <- err
				return
			}
		}
		if g.setID != nil {
			if err := denySetIDModes(g.setID); err != nil {
				started <- err
				return
			}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		<-done
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			if g.active() && g.hermesHome != "" {
				restoreProtectedModes(g.hermesHome)
			}
		})
	}, nil
}

// restoreProtectedModes takes group and other permissions back from
// HERMES_HOME's protected entries (and write from HERMES_HOME itself)
// after a command: Landlock does not govern chmod, so `chmod 644
// HERMES_HOME/.env` run by a command would leave the keys readable to
// every local user. Symlinks are not followed.
func restoreProtectedModes(home string) {
	dirfd, err := unix.Open(home, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if unix.Fstat(dirfd, &st) == nil && st.Mode&0o022 != 0 {
		_ = unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", dirfd), st.Mode&0o7777&^0o022)
	}
	entries, err := os.ReadDir(home)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !IsProtectedName(e.Name()) || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if unix.Fstatat(dirfd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&0o077 != 0 {
			_ = unix.Fchmodat(dirfd, e.Name(), st.Mode&0o7777&^0o077, 0)
		}
	}
}

// dropPtraceCapability removes CAP_SYS_PTRACE from the calling thread
// (bounding, ambient, effective, permitted and inheritable sets), so that
// its children, even running as root, cannot read the environment or
// memory of the non-dumpable hermes process (HideProcess). Without the
// capability in the first place (not root) there is nothing to do.
func dropPtraceCapability() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	const word, bit = unix.CAP_SYS_PTRACE / 32, uint32(1) << (unix.CAP_SYS_PTRACE % 32)
	if (data[word].Permitted|data[word].Effective|data[word].Inheritable)&bit == 0 {
		return nil
	}
	// Bounding set first (needs CAP_SETPCAP, which root has), so that
	// exec cannot grant it back; then the thread's own sets.
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("drop CAP_SYS_PTRACE from the bounding set: %w", err)
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, unix.CAP_SYS_PTRACE, 0, 0)
	for i := range data {
		if i == word {
			data[i].Effective &^= bit
			data[i].Permitted &^= bit
			data[i].Inheritable &^= bit
		}
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset without CAP_SYS_PTRACE: %w", err)
	}
	return nil
}

// restrictThread enforces the ruleset on the calling thread only. Without
// CAP_SYS_ADMIN the kernel wants no_new_privs first (set for this thread
// and inherited by its children: setuid programs such as sudo do not
// elevate under the guard).
func restrictThread(fd int) error {
	err := ll.LandlockRestrictSelf(fd, 0)
	if errors.Is(err, unix.EPERM) {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
		err = ll.LandlockRestrictSelf(fd, 0)
	}
	if err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// HideProcess keeps hermes's secrets out of what its commands can read
// about it through /proc. It marks the process non-dumpable (prctl
// PR_SET_DUMPABLE 0: /proc/PID/mem and friends then need CAP_SYS_PTRACE,
// which commands never have, see dropPtraceCapability), and it overwrites
// the values of secret variables (IsSecretName) in the process's initial
// environment block, which /proc/PID/environ shows and which some kernels
// still let a same-user process read; the values live on in the Go
// environment (os.Getenv) only. It also disables core dumps of hermes.
//
// A hermes that is itself a command of another sandbox (hermes chat inside
// a box, or under another hermes's guard: Landlock, or another LSM,
// refuses to open /proc/self/mem for writing) cannot scrub; being
// non-dumpable is then its protection and no error is reported.
func HideProcess() error {
	// Scrub first: once non-dumpable, /proc/self/mem belongs to root and a
	// process that is not root can no longer open it.
	scrubErr := scrubInitialEnviron()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	if errors.Is(scrubErr, fs.ErrPermission) {
		return nil
	}
	return scrubErr
}

// scrubInitialEnviron rewrites, in place, the value of every secret entry
// of the environment block the kernel set up at exec (between env_start
// and env_end, fields 48 and 49 of /proc/self/stat) with '*'. os.Setenv
// first gives each such variable a copy on the heap, so the Go
// environment keeps its value. The block is written through
// /proc/self/mem, always open to the process itself.
func scrubInitialEnviron() error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// fields[0] is field 3 (state); env_start and env_end are fields 50, 51
	// in proc(5) numbering since Linux 3.5.
	if len(fields) < 49 {
		return nil
	}
	var start, end int64
	if _, err := fmt.Sscan(fields[47], &start); err != nil {
		return err
	}
	if _, err := fmt.Sscan(fields[48], &end); err != nil {
		return err
	}
	if start <= 0 || end <= start || end-start > 1<<24 {
		return nil
	}
	for _, kv := range os.Environ() {
		name, value, ok := strings.Cut(kv, "=")
		if ok && value != "" && IsSecretName(name) {
			_ = os.Setenv(name, strings.Clone(value))
		}
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("scrub the environment block: %w", err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return fmt.Errorf("scrub the environment block: %w", err)
	}
	changed := false
	for off := 0; off < len(block); {
		n := bytes.IndexByte(block[off:], 0)
		if n < 0 {
			n = len(block) - off
		}
		entry := block[off : off+n]
		if eq := bytes.IndexByte(entry, '='); eq > 0 && IsSecretName(string(entry[:eq])) {
			for i := eq + 1; i < len(entry); i++ {
				entry[i] = '*'
				changed = true
			}
		}
		off += n + 1
	}
	if !changed {
		return nil
	}
	if _, err := mem.WriteAt(block, start); err != nil {
		return fmt.Errorf("scrub the environment block: %w", err)
	}
	return nil
}
