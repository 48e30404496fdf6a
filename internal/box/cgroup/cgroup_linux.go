// Package cgroup makes, limits, reads and removes a hermes box's control
// group on cgroup v1 or v2 (Group). internal/box names the groups (one per
// box, below box.DefaultCgroupRoot, tagged with their owner process) and
// sweeps those whose owner died.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Limits are a box's resource limits.
type Limits struct {
	MemoryBytes int64   // hard limit, swap off; 0 = none
	PIDs        int     // max tasks; 0 = none
	CPUs        float64 // CFS quota in cores; 0 = none
}

// cpuPeriodMicros is the CFS period used for the CPU quota (100 ms, the
// kernel default).
const cpuPeriodMicros = 100_000

// Stats are a box's resource counters.
type Stats struct {
	MemoryBytes     int64 // current usage
	MemoryMaxBytes  int64 // peak usage (v1 max_usage_in_bytes, v2 memory.peak; 0 if unknown)
	PIDs            int   // current tasks
	CPUUsage        time.Duration
	ThrottledPeriod int64 // CFS periods in which the box was throttled (cpu.stat nr_throttled)
	OOMKills        int64 // processes killed by the OOM killer in this box
	// SocketBytes is the memory of the box's TCP socket buffers: on v1
	// memory.kmem.tcp.usage_in_bytes, limited to the memory limit on its
	// own; on v2 memory.stat "sock", part of MemoryBytes.
	SocketBytes int64
}

// cgroup is the box's control group on one cgroup version.
type Group interface {
	// Add moves process pid (all its threads) into the group.
	Add(pid int) error
	// Stats reads the counters.
	Stats() (Stats, error)
	// OOMKills returns the group's OOM-kill counter. On v1 it reads the
	// counter only after the kernel signalled an OOM event (an eventfd
	// registered through cgroup.event_control, memcg v1 docs §9), so a
	// command that ran without memory trouble costs one non-blocking read
	// of that eventfd and no file access; otherwise it returns the last
	// value read.
	OOMKills() int64
	// Rename moves the group to name (e.g. "hermes/task-1") under the same
	// parent, with its processes; on failure the group keeps its old name.
	Rename(name string) error
	// Name is the group's path below each hierarchy's root (e.g.
	// "hermes/<owner>_<home>_<id>_<task>").
	Name() string
	// KillAll SIGKILLs every process in the group.
	KillAll()
	// Remove deletes the group, waiting up to 2 s for its processes to go.
	Remove() error
	// removeEmpty deletes the group if it has no processes (one rmdir(2)
	// per hierarchy, no retry); the error says it still has some.
	RemoveEmpty() error
	// Dirs are the group's directories, one per hierarchy it has
	// (cgroup v1: one per mounted controller; v2: one).
	Dirs() []string
}

// Mounts lists the cgroup hierarchies of /proc/self/mountinfo: v1
// controller name → mount point, and the v2 mount point ("" if none).
func Mounts(mountinfo string) (v1 map[string]string, v2 string, err error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	v1 = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(fields) || len(fields) < 5 {
			continue
		}
		fstype, mnt := fields[sep+1], fields[4]
		switch fstype {
		case "cgroup2":
			if v2 == "" {
				v2 = mnt
			}
		case "cgroup":
			for _, o := range strings.Split(fields[sep+3], ",") {
				switch o {
				case "memory", "pids", "cpu", "cpuacct", "freezer":
					if _, ok := v1[o]; !ok {
						v1[o] = mnt
					}
				}
			}
		}
	}
	return v1, v2, sc.Err()
}

// New creates group name (e.g. "hermes/task-1") with limits, on
// cgroup v1 when its memory, pids and cpu controllers are mounted, else on
// cgroup v2 at v2root. The error names the missing controller.
func New(name string, lim Limits) (Group, error) {
	v1, v2, err := Mounts("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read cgroup mounts: %w", err)
	}
	if v1["memory"] != "" || v1["pids"] != "" || v1["cpu"] != "" {
		var missing []string
		for _, c := range []string{"memory", "pids", "cpu"} {
			if v1[c] == "" {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("box limits need the cgroup v1 controllers %s, which are not mounted: mount them under /sys/fs/cgroup or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)", strings.Join(missing, ", "))
		}
		return newCgroupV1(v1, name, lim)
	}
	if v2 == "" {
		return nil, errors.New("no cgroup filesystem is mounted: mount cgroup2 at /sys/fs/cgroup (box limits need memory, pids and cpu controllers)")
	}
	return newCgroupV2(v2, name, lim)
}

// mkdirError is the error of creating cgroup directory dir (v2 tells the
// cgroup version); when the kernel refused it for lack of privilege it
// says how to get one: run hermes as root, or on cgroup v2 in a subtree
// delegated to the user (systemd.resource-control(5) Delegate=).
func mkdirError(dir string, err error, v2 bool) error {
	return withPrivilegeFix(fmt.Errorf("create cgroup %s: %w", dir, err), v2)
}

// withPrivilegeFix adds to err, when it is a permission failure, how to
// get cgroups a box can use (see mkdirError).
func withPrivilegeFix(err error, v2 bool) error {
	if !errors.Is(err, os.ErrPermission) && !errors.Is(err, unix.EROFS) {
		return err
	}
	fix := "box limits need cgroups this user cannot create on cgroup v1, where only root can: run hermes as root (sudo hermes …), or use terminal.backend: local"
	if v2 {
		fix = "box limits need root or a delegated cgroup subtree: run hermes as root (sudo hermes …), or in a delegated scope: systemd-run --user --scope -p Delegate=yes hermes …"
	}
	return &PrivilegeError{Err: err, Fix: fix}
}

// PrivilegeError is a cgroup operation the kernel refused this user
// (EACCES, EPERM, EROFS), with how to get cgroups a box can use.
type PrivilegeError struct {
	Err error  // the failed operation, naming the file
	Fix string // e.g. "run hermes as root (sudo hermes …), or …"
}

func (e *PrivilegeError) Error() string { return e.Err.Error() + " (" + e.Fix + ")" }
func (e *PrivilegeError) Unwrap() error { return e.Err }

// Probe creates group name with no limits the way New does, then removes
// it: nil means this process can make box cgroups; the error is New's,
// with the fix.
func Probe(name string) error {
	g, err := New(name, Limits{})
	if err != nil {
		return err
	}
	return g.Remove()
}

// writeCgroupFile writes value to dir/file, naming both in the error.
func writeCgroupFile(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: write %q: %w", filepath.Join(dir, file), value, err)
	}
	return nil
}

func readCgroupInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// readKeyed returns key's value from a "key value" per line file
// (memory.oom_control, memory.events, cpu.stat).
func readKeyed(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func killProcsIn(procsFile string) int {
	b, err := os.ReadFile(procsFile)
	if err != nil {
		return 0
	}
	n := 0
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			unix.Kill(pid, unix.SIGKILL)
			n++
		}
	}
	return n
}

// removeDirs rmdirs each group dir, retrying while processes exit.
func removeDirs(dirs []string, procs func(dir string) string) error {
	deadline := time.Now().Add(2 * time.Second)
	var last error
	for _, d := range dirs {
		for {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			last = fmt.Errorf("remove cgroup %s: %w", d, err)
			if time.Now().After(deadline) {
				return last
			}
			killProcsIn(procs(d))
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// rmdirAll rmdirs each of dirs once; one already gone counts as removed.
func rmdirAll(dirs []string) error {
	for _, d := range dirs {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove cgroup %s: %w", d, err)
		}
	}
	return nil
}

// cgroupV1 is a group in each v1 hierarchy (memory, pids, cpu, cpuacct, freezer).
type cgroupV1 struct {
	name string            // path below each hierarchy's root
	dirs map[string]string // controller → group dir

	oomMu     sync.Mutex
	oomEvent  int   // eventfd signalled on each OOM in the group; -1 = none (read the counter every time)
	oomRecent bool  // an event was consumed by the last call: read once more (the counter lags the event)
	oomKills  int64 // last counter value read
}

// procsDirs are the distinct group dirs to write cgroup.procs into (two
// controllers may share one hierarchy, e.g. cpu,cpuacct).
// Dirs are the group's distinct controller directories (procsDirs).
func (g *cgroupV1) Dirs() []string { return g.procsDirs() }

func (g *cgroupV1) procsDirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct", "freezer"} {
		if d := g.dirs[c]; d != "" && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// watchOOM registers an eventfd for the memory group's OOM notifications
// (cgroup.event_control with memory.oom_control); on failure OOMKills
// falls back to reading the counter on every call.
func (g *cgroupV1) watchOOM() {
	g.oomEvent = -1
	mem := g.dirs["memory"]
	if mem == "" {
		return
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return
	}
	ctl, err := os.Open(filepath.Join(mem, "memory.oom_control"))
	if err != nil {
		unix.Close(efd)
		return
	}
	defer ctl.Close() // the kernel keeps its own reference once registered
	if writeCgroupFile(mem, "cgroup.event_control", fmt.Sprintf("%d %d", efd, ctl.Fd())) != nil {
		unix.Close(efd)
		return
	}
	g.oomEvent = efd
}

func (g *cgroupV1) OOMKills() int64 {
	g.oomMu.Lock()
	defer g.oomMu.Unlock()
	if g.oomEvent >= 0 {
		var buf [8]byte
		_, err := unix.Read(g.oomEvent, buf[:])
		signalled := err == nil
		if !signalled && !g.oomRecent {
			return g.oomKills
		}
		g.oomRecent = signalled
	}
	if n := readKeyed(filepath.Join(g.dirs["memory"], "memory.oom_control"), "oom_kill"); n > g.oomKills {
		g.oomKills = n
	}
	return g.oomKills
}

func newCgroupV1(mounts map[string]string, name string, lim Limits) (*cgroupV1, error) {
	g := &cgroupV1{name: name, dirs: map[string]string{}, oomEvent: -1}
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct", "freezer"} {
		if mounts[c] == "" {
			continue
		}
		if _, dup := g.dirs[c]; dup {
			continue
		}
		dir := filepath.Join(mounts[c], name)
		err := os.MkdirAll(filepath.Dir(dir), 0o755)
		if err == nil {
			err = os.Mkdir(dir, 0o755) // a group of its own: never join an existing one
		}
		if err != nil {
			g.Remove()
			return nil, mkdirError(dir, err, false)
		}
		g.dirs[c] = dir
	}
	mem, pids, cpu := g.dirs["memory"], g.dirs["pids"], g.dirs["cpu"]
	var err error
	set := func(dir, file, value string) {
		if err == nil {
			err = writeCgroupFile(dir, file, value)
		}
	}
	if lim.MemoryBytes > 0 {
		v := strconv.FormatInt(lim.MemoryBytes, 10)
		set(mem, "memory.limit_in_bytes", v)
		if _, serr := os.Stat(filepath.Join(mem, "memory.memsw.limit_in_bytes")); serr == nil {
			set(mem, "memory.memsw.limit_in_bytes", v) // memory+swap = memory: no swap
		}
		// v1 charges TCP socket buffers to a counter of their own, unlimited
		// unless this is set (v2 charges them to memory.current already):
		// without it a box pins any amount of kernel memory in socket
		// buffers. They get the memory limit again, separately.
		if _, serr := os.Stat(filepath.Join(mem, "memory.kmem.tcp.limit_in_bytes")); serr == nil {
			set(mem, "memory.kmem.tcp.limit_in_bytes", v)
		}
		if _, serr := os.Stat(filepath.Join(mem, "memory.swappiness")); serr == nil && err == nil {
			writeCgroupFile(mem, "memory.swappiness", "0") // refused under some parents; best effort
		}
	}
	if lim.PIDs > 0 {
		set(pids, "pids.max", strconv.Itoa(lim.PIDs))
	}
	if lim.CPUs > 0 {
		set(cpu, "cpu.cfs_period_us", strconv.Itoa(cpuPeriodMicros))
		set(cpu, "cpu.cfs_quota_us", strconv.FormatInt(int64(lim.CPUs*cpuPeriodMicros), 10))
	}
	if err != nil {
		g.Remove()
		return nil, err
	}
	g.watchOOM()
	return g, nil
}

func (g *cgroupV1) Rename(name string) error {
	renamed := map[string]string{} // old dir → new dir
	var err error
	for _, d := range g.procsDirs() {
		nd := filepath.Join(filepath.Dir(d), filepath.Base(name))
		if err = os.Rename(d, nd); err != nil {
			err = fmt.Errorf("rename cgroup %s to %s: %w", d, nd, err)
			break
		}
		renamed[d] = nd
	}
	if err != nil {
		for d, nd := range renamed {
			os.Rename(nd, d)
		}
		return err
	}
	for c, d := range g.dirs {
		g.dirs[c] = renamed[d]
	}
	g.name = filepath.Join(filepath.Dir(g.name), filepath.Base(name))
	return nil
}

func (g *cgroupV1) Name() string { return g.name }

func (g *cgroupV1) Add(pid int) error {
	for _, d := range g.procsDirs() {
		if err := writeCgroupFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

func (g *cgroupV1) Stats() (Stats, error) {
	mem, pids := g.dirs["memory"], g.dirs["pids"]
	st := Stats{
		MemoryBytes:     readCgroupInt(filepath.Join(mem, "memory.usage_in_bytes")),
		MemoryMaxBytes:  readCgroupInt(filepath.Join(mem, "memory.max_usage_in_bytes")),
		PIDs:            int(readCgroupInt(filepath.Join(pids, "pids.current"))),
		ThrottledPeriod: readKeyed(filepath.Join(g.dirs["cpu"], "cpu.stat"), "nr_throttled"),
		OOMKills:        readKeyed(filepath.Join(mem, "memory.oom_control"), "oom_kill"),
		SocketBytes:     readCgroupInt(filepath.Join(mem, "memory.kmem.tcp.usage_in_bytes")),
	}
	if d := g.dirs["cpuacct"]; d != "" {
		st.CPUUsage = time.Duration(readCgroupInt(filepath.Join(d, "cpuacct.usage")))
	}
	return st, nil
}

// KillAll freezes the group (so nothing forks meanwhile), kills every
// member and thaws it so the kills are delivered.
func (g *cgroupV1) KillAll() {
	fz := g.dirs["freezer"]
	if fz != "" {
		writeCgroupFile(fz, "freezer.state", "FROZEN")
	}
	for _, d := range g.procsDirs() {
		killProcsIn(filepath.Join(d, "cgroup.procs"))
	}
	if fz != "" {
		writeCgroupFile(fz, "freezer.state", "THAWED")
	}
}

func (g *cgroupV1) RemoveEmpty() error { return rmdirAll(g.procsDirs()) }

func (g *cgroupV1) Remove() error {
	g.oomMu.Lock()
	if g.oomEvent >= 0 {
		unix.Close(g.oomEvent)
		g.oomEvent = -1
	}
	g.oomMu.Unlock()
	return removeDirs(g.procsDirs(), func(d string) string { return filepath.Join(d, "cgroup.procs") })
}

// cgroupV2 is a group in the unified hierarchy.
type cgroupV2 struct {
	name string // path below the hierarchy's root
	dir  string
}

func (g *cgroupV2) Name() string { return g.name }

// Dirs is the group's directory.
func (g *cgroupV2) Dirs() []string { return []string{g.dir} }

// newCgroupV2 creates root/name, enabling the memory, pids and cpu
// controllers in every parent's cgroup.subtree_control on the way.
func newCgroupV2(root, name string, lim Limits) (*cgroupV2, error) {
	dir := filepath.Join(root, name)
	parts := strings.Split(filepath.Clean(name), string(filepath.Separator))
	cur := root
	for i, p := range parts {
		enable := make([]string, 0, 3)
		avail, err := os.ReadFile(filepath.Join(cur, "cgroup.controllers"))
		if err != nil {
			return nil, fmt.Errorf("cgroup v2 at %s: %w", cur, err)
		}
		have := strings.Fields(string(avail))
		for _, c := range []string{"memory", "pids", "cpu"} {
			if !contains(have, c) {
				return nil, fmt.Errorf("cgroup v2 controller %q is not available in %s: enable it in the parent's cgroup.subtree_control (or run hermes in a cgroup delegated with memory, pids and cpu)", c, cur)
			}
			enable = append(enable, "+"+c)
		}
		if err := writeCgroupFile(cur, "cgroup.subtree_control", strings.Join(enable, " ")); err != nil {
			return nil, withPrivilegeFix(err, true)
		}
		cur = filepath.Join(cur, p)
		// The box's own group must be new: never join an existing one.
		if err := os.Mkdir(cur, 0o755); err != nil && (i == len(parts)-1 || !errors.Is(err, os.ErrExist)) {
			return nil, mkdirError(cur, err, true)
		}
	}
	g := &cgroupV2{name: name, dir: dir}
	var err error
	set := func(file, value string) {
		if err == nil {
			err = writeCgroupFile(dir, file, value)
		}
	}
	if lim.MemoryBytes > 0 {
		set("memory.max", strconv.FormatInt(lim.MemoryBytes, 10))
		set("memory.swap.max", "0")
	}
	if lim.PIDs > 0 {
		set("pids.max", strconv.Itoa(lim.PIDs))
	}
	if lim.CPUs > 0 {
		set("cpu.max", fmt.Sprintf("%d %d", int64(lim.CPUs*cpuPeriodMicros), cpuPeriodMicros))
	}
	if err != nil {
		g.Remove()
		return nil, err
	}
	return g, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// OOMKills reads memory.events (v2 has no OOM eventfd; its file
// notifications are delivered late, after the victim's exit).
func (g *cgroupV2) OOMKills() int64 {
	return readKeyed(filepath.Join(g.dir, "memory.events"), "oom_kill")
}

func (g *cgroupV2) Rename(name string) error {
	nd := filepath.Join(filepath.Dir(g.dir), filepath.Base(name))
	if err := os.Rename(g.dir, nd); err != nil {
		return fmt.Errorf("rename cgroup %s to %s: %w", g.dir, nd, err)
	}
	g.dir = nd
	g.name = filepath.Join(filepath.Dir(g.name), filepath.Base(name))
	return nil
}

func (g *cgroupV2) Add(pid int) error {
	return writeCgroupFile(g.dir, "cgroup.procs", strconv.Itoa(pid))
}

func (g *cgroupV2) Stats() (Stats, error) {
	return Stats{
		MemoryBytes:     readCgroupInt(filepath.Join(g.dir, "memory.current")),
		MemoryMaxBytes:  readCgroupInt(filepath.Join(g.dir, "memory.peak")),
		PIDs:            int(readCgroupInt(filepath.Join(g.dir, "pids.current"))),
		CPUUsage:        time.Duration(readKeyed(filepath.Join(g.dir, "cpu.stat"), "usage_usec")) * time.Microsecond,
		ThrottledPeriod: readKeyed(filepath.Join(g.dir, "cpu.stat"), "nr_throttled"),
		OOMKills:        readKeyed(filepath.Join(g.dir, "memory.events"), "oom_kill"),
		SocketBytes:     readKeyed(filepath.Join(g.dir, "memory.stat"), "sock"),
	}, nil
}

// KillAll writes cgroup.kill (Linux 5.14+), else kills each member.
func (g *cgroupV2) KillAll() {
	if writeCgroupFile(g.dir, "cgroup.kill", "1") != nil {
		killProcsIn(filepath.Join(g.dir, "cgroup.procs"))
	}
}

func (g *cgroupV2) RemoveEmpty() error { return rmdirAll([]string{g.dir}) }

func (g *cgroupV2) Remove() error {
	return removeDirs([]string{g.dir}, func(d string) string { return filepath.Join(d, "cgroup.procs") })
}

// Open opens the existing group name (a path below the
// hierarchies' roots, as cgroup.Name returns it) for reading its counters.
func Open(name string) (Group, error) {
	if name == "" || filepath.Clean("/"+name) != "/"+name || strings.Contains(name, "..") {
		return nil, fmt.Errorf("bad cgroup name %q", name)
	}
	v1, v2, err := Mounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return Named(v1, v2, name)
}

func Named(v1 map[string]string, v2, name string) (Group, error) {
	if v1["memory"] != "" {
		g := &cgroupV1{name: name, dirs: map[string]string{}, oomEvent: -1}
		for c, mnt := range v1 {
			g.dirs[c] = filepath.Join(mnt, name)
		}
		return g, nil
	}
	if v2 == "" {
		return nil, fmt.Errorf("no cgroup filesystem: %w", os.ErrNotExist)
	}
	return &cgroupV2{name: name, dir: filepath.Join(v2, name)}, nil
}
