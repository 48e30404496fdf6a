package box

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/internal/box/cgroup"
	"github.com/hermes-go/hermes/internal/box/initproc"
)

// Prestarting (Options.Prestart): the Manager keeps one booted init, and
// for persistent boxes one fresh layer disk image (its file system already
// mounted by the host, see layerMount), ready for the next box start, and
// makes new ones in the background after each start.

// alive reports whether the init still runs (it is not a zombie).
func (i *spawnedInit) alive() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", i.cmd.Process.Pid))
	if err != nil {
		return false
	}
	s := string(b)
	j := strings.LastIndexByte(s, ')')
	return j > 0 && j+2 < len(s) && s[j+2] != 'Z' && s[j+2] != 'X'
}

// takeSpare hands out the prestarted init (Options.Prestart), its log
// moved to dir/init.log, or nil when there is none (or it died).
func (m *Manager) takeSpare(dir string) *spawnedInit {
	m.spareMu.Lock()
	sp := m.spare
	m.spare = nil
	m.spareMu.Unlock()
	if sp == nil {
		return nil
	}
	if !sp.alive() {
		sp.kill()
		os.Remove(sp.log)
		return nil
	}
	log := filepath.Join(dir, "init.log")
	if os.Rename(sp.log, log) == nil {
		sp.log = log
	}
	return sp
}

// refillSpare prepares, in the background, what the next box start can
// take instead of making it (Options.Prestart): a booted init, and for
// persistent boxes a copy of the layer's disk image template.
func (m *Manager) refillSpare() {
	if !m.opts.Prestart {
		return
	}
	m.goUnlessClosed(&m.spareWG, func() {
		m.spareMu.Lock()
		if m.refilling {
			m.spareMu.Unlock()
			return
		}
		m.refilling = true
		needInit, needDisk := m.spare == nil, m.spareDisk == "" && m.persistent() && os.Geteuid() == 0
		m.spareMu.Unlock()
		dir := filepath.Join(m.opts.Home, "boxes", ".spare")
		var sp *spawnedInit
		var disk string
		var mnt *layerMount
		if os.MkdirAll(dir, 0o700) == nil {
			id := newGroupID()
			if needInit {
				sp = m.spawnSpareInit(filepath.Join(dir, m.spareFileName(id, "init.log")), id)
			}
			if needDisk {
				disk = filepath.Join(dir, m.spareFileName(id, "disk.img"))
				if m.ensureDiskImage(disk, m.opts.Terminal.ContainerDisk) != nil {
					disk = ""
				} else {
					mnt, _ = mountLayerDetached(disk) // nil: the init mounts it
					m.prepareSpareLayer(mnt)
				}
			}
		}
		m.spareMu.Lock()
		m.refilling = false
		if sp != nil {
			m.spare = sp
		}
		if disk != "" {
			m.spareDisk, m.spareMount = disk, mnt
		}
		m.spareMu.Unlock()
	})
}

// goUnlessClosed runs f in a goroutine counted by wg, unless m is already
// closed. The count is taken under m.mu, where Close sets closed before it
// waits on wg, so Close never misses a job that started.
func (m *Manager) goUnlessClosed(wg *sync.WaitGroup, f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
}

// spawnSpareInit spawns an init and moves it into a cgroup of its own,
// <root>/<owner>_<home>_<id>_.spare, with the box limits (renamed to the
// task's when a box takes it); without that group the init is still
// usable, and joins its box's group when taken.
func (m *Manager) spawnSpareInit(logPath, id string) *spawnedInit {
	sp, err := m.spawnInit(logPath, os.Geteuid() != 0)
	if err != nil {
		return nil
	}
	sp.groupID = id
	cg, err := cgroup.New(m.groupPath(id, spareGroupTask), m.limits())
	if err != nil {
		return sp
	}
	if err := cg.Add(sp.cmd.Process.Pid); err != nil {
		cg.Remove()
		return sp
	}
	sp.cg = cg
	return sp
}

// takeSpareDisk moves the prepared disk image (Options.Prestart) to path,
// reporting whether there was one, with its file system mounted by the
// host when that worked (nil otherwise).
func (m *Manager) takeSpareDisk(path string) (bool, *layerMount) {
	m.spareMu.Lock()
	disk, lm := m.spareDisk, m.spareMount
	m.spareDisk, m.spareMount = "", nil
	m.spareMu.Unlock()
	if disk == "" || os.Rename(disk, path) != nil {
		lm.Close()
		return false, nil
	}
	return true, lm
}

// prepareSpareLayer lays out a prestarted layer's file system ahead of
// the box start: its overlay directories, and the host directories the
// box shows empty made opaque in its upper and recorded
// (initproc.EmptyAllInUpper), which the init then finds done. Best effort: the
// init does whatever is missing.
func (m *Manager) prepareSpareLayer(mnt *layerMount) {
	if mnt == nil {
		return
	}
	lower, err := m.resolveBase()
	if err != nil {
		return
	}
	empty, _ := m.privateHostPaths(lower)
	layerDir := initproc.FDPath(mnt.fd) // the detached mount, reached through its descriptor
	for _, d := range []string{"upper", "work", "ws-upper", "ws-work"} {
		if err := os.MkdirAll(filepath.Join(layerDir, d), 0o755); err != nil {
			return
		}
	}
	initproc.EmptyAllInUpper(layerDir, empty, false, true)
}

// spareRefillDelay is how long after a box start the Manager begins
// preparing the next spare (Options.Prestart) when the box has not
// finished a command by then.
const spareRefillDelay = 100 * time.Millisecond

// deferRefill makes the next spare (Options.Prestart) once b's first
// command has ended, or spareRefillDelay after the start, or when b stops,
// whichever comes first: the refill (an init's exec and boot, for
// persistent boxes a disk image copied and mounted) takes CPU and I/O the
// new box's first command would otherwise wait for, and the spare is only
// needed by the next box start.
func (b *Box) deferRefill(m *Manager) {
	if !m.opts.Prestart {
		return
	}
	var mu sync.Mutex
	var timer *time.Timer
	once := sync.OnceFunc(func() {
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		m.refillSpare()
	})
	mu.Lock()
	timer = time.AfterFunc(spareRefillDelay, once)
	mu.Unlock()
	b.refill = once
}

// refillNow runs the refill deferRefill set up, if it has not run yet.
func (b *Box) refillNow() {
	if b.refill != nil {
		b.refill()
	}
}
