package box

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/box/cgroup"
)

// Box cgroups are named so that no two boxes can share one, and so that a
// group outlived by the hermes process that made it can be told apart
// from a live one (issues 7 and 17):
//
//	<root>/<pid>_<start>_<home>_<id>_<task>
//
// where <root> is Options.CgroupRoot ("hermes" by default), <pid> and
// <start> are the owning hermes process's pid and start time (clock ticks
// since boot, /proc/<pid>/stat field 22, which tells a reused pid apart),
// <home> is homeKey(HERMES_HOME), <id> is random per box, and <task> is the
// task id, or ".spare" for a prestarted init's group (renamed to the task
// when a box takes it). Task ids never start with '.', and the first four
// fields contain no '_', so the name parses back.

// DefaultCgroupRoot is the parent group of all box groups in each cgroup
// hierarchy (e.g. /sys/fs/cgroup/memory/hermes).
const DefaultCgroupRoot = "hermes"

// ProbeCgroup creates a box cgroup below DefaultCgroupRoot the way box
// creation does, with no limits, and removes it (hermes doctor): nil
// means this user can create boxes' cgroups; the error says why not and
// the fix (root, or a delegated cgroup v2 subtree).
func ProbeCgroup() error {
	return cgroup.Probe(filepath.Join(DefaultCgroupRoot, fmt.Sprintf(".doctor-probe-%d", os.Getpid())))
}

// spareGroupTask is the task field of a prestarted init's group name.
const spareGroupTask = ".spare"

// legacyGrace is how old an empty group of the old naming (hermes/<task>,
// hermes/.spare-<id>, no owner recorded) must be before a sweep removes
// it: such a group is only empty between its creation and the init's
// attach, a few ms.
const legacyGrace = time.Minute

// groupOwner identifies a process across pid reuse.
type groupOwner struct {
	pid   int
	start uint64 // clock ticks after boot (/proc/<pid>/stat starttime)
}

// processOwner reads pid's start time; the error wraps fs.ErrNotExist when
// pid does not run, and a zombie counts as gone.
func processOwner(pid int) (groupOwner, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return groupOwner{}, err
	}
	s := string(b)
	j := strings.LastIndexByte(s, ')')
	if j < 0 {
		return groupOwner{}, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(s[j+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return groupOwner{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	if f[0] == "Z" || f[0] == "X" {
		return groupOwner{}, fmt.Errorf("process %d has exited: %w", pid, fs.ErrNotExist)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return groupOwner{}, fmt.Errorf("/proc/%d/stat: start time %q", pid, f[19])
	}
	return groupOwner{pid: pid, start: start}, nil
}

// tag is the owner's part of a group name, "<pid>_<start>".
func (o groupOwner) tag() string { return strconv.Itoa(o.pid) + "_" + strconv.FormatUint(o.start, 10) }

// alive reports whether the owner still runs (same pid, same start time).
func (o groupOwner) alive() bool {
	cur, err := processOwner(o.pid)
	return err == nil && cur.start == o.start
}

// parseOwnerTag splits "<pid>_<start>_rest" into the owner and rest.
func parseOwnerTag(name string) (groupOwner, string, bool) {
	p, rest, ok1 := strings.Cut(name, "_")
	s, rest, ok2 := strings.Cut(rest, "_")
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(s, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || pid <= 0 {
		return groupOwner{}, "", false
	}
	return groupOwner{pid: pid, start: start}, rest, true
}

// boxGroup is a parsed box group name.
type boxGroup struct {
	owner    groupOwner
	home, id string
	task     string // or spareGroupTask
}

// parseBoxGroup parses the base name of a box group.
func parseBoxGroup(name string) (boxGroup, bool) {
	o, rest, ok := parseOwnerTag(name)
	if !ok {
		return boxGroup{}, false
	}
	home, rest, ok1 := strings.Cut(rest, "_")
	id, task, ok2 := strings.Cut(rest, "_")
	if !ok1 || !ok2 || home == "" || id == "" || (task != spareGroupTask && !isTaskID(task)) {
		return boxGroup{}, false
	}
	return boxGroup{owner: o, home: home, id: id, task: task}, true
}

// name is the group's base name.
func (g boxGroup) name() string { return g.owner.tag() + "_" + g.home + "_" + g.id + "_" + g.task }

// homeKey names a HERMES_HOME in group names: 12 hex digits of the SHA-256
// of its absolute path.
func homeKey(home string) string {
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	sum := sha256.Sum256([]byte(filepath.Clean(home)))
	return hex.EncodeToString(sum[:6])
}

// newGroupID returns a random box id for a group name: 8 characters of
// lower-case base32 (40 bits).
func newGroupID() string {
	var b [5]byte
	rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
}

// groupPath is the path of a box group (root/name) relative to each
// hierarchy's mount point.
func (m *Manager) groupPath(id, task string) string {
	return filepath.Join(m.cgroupRoot, boxGroup{owner: m.owner, home: m.homeKey, id: id, task: task}.name())
}

// hierarchyRoots lists the directories of root in every mounted cgroup
// hierarchy a box uses (each v1 controller's, deduplicated, and v2's).
func hierarchyRoots(root string) []string {
	v1, v2, err := cgroup.Mounts("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct", "freezer"} {
		if mnt := v1[c]; mnt != "" && !seen[mnt] {
			seen[mnt] = true
			out = append(out, filepath.Join(mnt, root))
		}
	}
	if v2 != "" {
		out = append(out, filepath.Join(v2, root))
	}
	return out
}

// findBoxGroup returns the name (root/<group>) of the running box task of
// HERMES_HOME home, looked up in hierarchy dir dirRoot (whose groups are
// root/…), with a live owner; the error wraps fs.ErrNotExist when there
// is none.
func findBoxGroup(dirRoot, root, home, task string) (string, error) {
	entries, err := os.ReadDir(dirRoot)
	if err != nil {
		return "", err
	}
	key := homeKey(home)
	for _, e := range entries {
		g, ok := parseBoxGroup(e.Name())
		if ok && e.IsDir() && g.home == key && g.task == task && g.owner.alive() {
			return filepath.Join(root, e.Name()), nil
		}
	}
	return "", fmt.Errorf("box %s: no cgroup: %w", task, fs.ErrNotExist)
}

// Leftovers is what a sweep found of hermes processes that ended (e.g.
// were SIGKILLed) without closing their boxes.
type Leftovers struct {
	// Removed are the cgroup directories removed: empty, owner gone.
	Removed []string
	// Busy are cgroup directories whose owner is gone but which still hold
	// processes; they are left alone.
	Busy []string
	// Loops are loop devices backed by a disk image of this HERMES_HOME
	// whose box is not running ("/dev/loopN image").
	Loops []string
	// Mounts are mount points under HERMES_HOME/boxes in this mount
	// namespace (boxes mount only in their own).
	Mounts []string
	// Files are the prestarted disk images and init logs of gone owners
	// that were removed from HERMES_HOME/boxes/.spare.
	Files []string
}

// Empty reports whether nothing was found.
func (l Leftovers) Empty() bool {
	return len(l.Removed)+len(l.Busy)+len(l.Loops)+len(l.Mounts)+len(l.Files) == 0
}

// CleanLeftovers removes what crashed hermes processes left behind: the
// empty box cgroups (under DefaultCgroupRoot) whose owning process is
// gone, and their prestarted disk images and logs in home; it reports
// loop devices and mounts of home's boxes that remain. It never touches a
// cgroup that has processes or whose owner runs. hermes box ls calls it;
// so does every Manager at its first box start (for its own root).
func CleanLeftovers(home string) Leftovers {
	return cleanLeftovers(home, DefaultCgroupRoot, true)
}

// cleanLeftovers is CleanLeftovers under cgroup root root; report also
// lists the loop devices and mounts it cannot remove (Leftovers.Loops and
// Mounts), which costs a scan of every loop device.
func cleanLeftovers(home, root string, report bool) Leftovers {
	var l Leftovers
	if os.Geteuid() == 0 {
		for _, dir := range hierarchyRoots(root) {
			sweepGroups(dir, &l)
		}
	}
	if home != "" {
		sweepSpareFiles(filepath.Join(home, "boxes", ".spare"), &l)
	}
	if home != "" && report {
		l.Loops = leftoverLoops(filepath.Join(home, "boxes"))
		l.Mounts = leftoverMounts(filepath.Join(home, "boxes"))
	}
	return l
}

// sweepGroups removes the groups in dir whose owner tag names a gone
// process (with their empty subgroups), and the empty untagged groups of
// the old naming older than legacyGrace.
func sweepGroups(dir string, l *Leftovers) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if o, _, ok := parseOwnerTag(e.Name()); ok {
			if !o.alive() {
				removeGroupTree(p, l)
			}
			continue
		}
		legacy := strings.HasPrefix(e.Name(), ".spare-") || isTaskID(e.Name())
		if info, err := e.Info(); err == nil && legacy && time.Since(info.ModTime()) > legacyGrace && groupEmpty(p) {
			removeGroupTree(p, l)
		}
	}
}

// groupEmpty reports whether cgroup dir has no processes of its own.
func groupEmpty(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && len(strings.TrimSpace(string(b))) == 0
}

// removeGroupTree removes dir and its subgroups, deepest first, leaving
// every group that has processes (reported as busy) and so its parents.
func removeGroupTree(dir string, l *Leftovers) bool {
	entries, _ := os.ReadDir(dir)
	ok := true
	for _, e := range entries {
		if e.IsDir() && !removeGroupTree(filepath.Join(dir, e.Name()), l) {
			ok = false
		}
	}
	if !ok {
		return false
	}
	if !groupEmpty(dir) {
		l.Busy = append(l.Busy, dir)
		return false
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		l.Busy = append(l.Busy, dir)
		return false
	}
	l.Removed = append(l.Removed, dir)
	return true
}

// spareFileName is the name of a prestarted init's log or disk image in
// HERMES_HOME/boxes/.spare: "<owner tag>_<id>.<kind>".
func (m *Manager) spareFileName(id, kind string) string {
	return m.owner.tag() + "_" + id + "." + kind
}

// sweepSpareFiles removes the prestarted files in dir whose owner is gone
// and which no loop device holds, with the temporary copies of images
// (".<name>.tmp…", copySparse) their owner was making when it ended.
func sweepSpareFiles(dir string, l *Leftovers) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		o, _, ok := parseOwnerTag(strings.TrimPrefix(e.Name(), "."))
		if !ok || e.IsDir() || o.alive() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if loopDeviceFor(p) != "" {
			continue // reported by leftoverLoops
		}
		if os.Remove(p) == nil {
			l.Files = append(l.Files, p)
		}
	}
}

// leftoverLoops lists the loop devices backed by an image under boxes
// whose box is not running: a spare image of a gone owner, or a box's
// disk.img whose state lock is free.
func leftoverLoops(boxes string) []string {
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		img := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		rel, err := filepath.Rel(boxes, img)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(m)))
		dir, file := filepath.Split(rel)
		switch filepath.Clean(dir) {
		case ".spare":
			if o, _, ok := parseOwnerTag(file); ok && !o.alive() {
				out = append(out, dev+" "+img)
			}
		default:
			if file != "disk.img" {
				continue
			}
			if lock, err := lockState(filepath.Join(boxes, dir)); err == nil {
				lock.Close()
				out = append(out, dev+" "+img)
			}
		}
	}
	return out
}

// leftoverMounts lists the mount points under boxes in this mount
// namespace.
func leftoverMounts(boxes string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if underAny(mp, []string{boxes}) {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMountinfo undoes the octal escapes of /proc/*/mountinfo paths
// (\040 for a space, \011, \012, \134).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sweepLeftovers cleans what crashed hermes processes left in m's cgroup
// root and HERMES_HOME (cleanLeftovers), once per Manager, in the
// background of its first box start; Close waits for it. Nobody reads a
// report there, so the loop devices and mounts are not listed.
func (m *Manager) sweepLeftovers() {
	m.sweepOnce.Do(func() {
		m.goUnlessClosed(&m.sweepWG, func() { cleanLeftovers(m.opts.Home, m.cgroupRoot, false) })
	})
}

// CgroupStats reads the counters of the running box taskID of HERMES_HOME
// home from its cgroup (under DefaultCgroupRoot), from any process. The
// error wraps fs.ErrNotExist when the box does not run.
func CgroupStats(home, taskID string) (cgroup.Stats, error) {
	g, err := openBoxCgroup(home, taskID)
	if err != nil {
		return cgroup.Stats{}, err
	}
	return g.Stats()
}

// openBoxCgroup finds the cgroup of the running box taskID of HERMES_HOME
// home (under DefaultCgroupRoot) for reading its counters; the error
// wraps fs.ErrNotExist when the box does not run.
func openBoxCgroup(home, taskID string) (cgroup.Group, error) {
	if err := checkTaskID(taskID); err != nil {
		return nil, err
	}
	v1, v2, err := cgroup.Mounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	dirRoot := filepath.Join(v2, DefaultCgroupRoot)
	if v1["memory"] != "" {
		dirRoot = filepath.Join(v1["memory"], DefaultCgroupRoot)
	} else if v2 == "" {
		return nil, fmt.Errorf("no cgroup filesystem: %w", os.ErrNotExist)
	}
	name, err := findBoxGroup(dirRoot, DefaultCgroupRoot, home, taskID)
	if err != nil {
		return nil, err
	}
	return cgroup.Named(v1, v2, name)
}
