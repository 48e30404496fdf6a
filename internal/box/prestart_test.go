package box

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// waitSpare waits until m has a prestarted init that has booted (and, for persistent
// boxes run as root, a prepared disk image) and returns the init's pid and
// the image path.
func waitSpare(t testing.TB, m *Manager) (int, string) {
	t.Helper()
	wantDisk := m.persistent() && os.Geteuid() == 0
	deadline := waitfor.Deadline(t)
	for {
		m.spareMu.Lock()
		sp, disk := m.spare, m.spareDisk
		m.spareMu.Unlock()
		if sp != nil && sp.isBooted() && (disk != "" || !wantDisk) {
			return sp.cmd.Process.Pid, disk
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing prestarted after 30 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// isZombieStat reports whether a /proc/PID/stat line is of a dead process.
func isZombieStat(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func TestBoxPrestartedInitAndDiskBecomeTheBox(t *testing.T) {
	needBoxes(t)
	home, ws := t.TempDir(), t.TempDir()
	term := testTerminal(ws)
	tr := true
	term.ContainerPersistent = &tr
	m, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: term, Home: home, Prestart: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	spare, disk := waitSpare(t, m)
	env, err := m.Open(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.Box(ctx, "first")
	if b.InitPID() != spare {
		t.Fatalf("box init pid %d, want the prestarted %d", b.InitPID(), spare)
	}
	if _, err := os.Stat(disk); err == nil {
		t.Fatal("the prepared disk image was not taken by the new persistent box")
	}
	if cgs, _ := os.ReadFile("/proc/" + strconv.Itoa(spare) + "/cgroup"); !strings.HasSuffix(b.cg.Name(), "_first") || !strings.Contains(string(cgs), ":/"+b.cg.Name()+"\n") {
		t.Fatalf("the prestarted init is not in the box's cgroup %s:\n%s", b.cg.Name(), cgs)
	}
	// The prepared layer came with the host's /root already shown empty.
	res, err := env.Exec(ctx, backendReq("hostname; ls -A /root | wc -l; echo kept > /root/f; cat /root/f"))
	if err != nil || res.ExitCode != 0 || trimmed(res) != Hostname+"\n0\nkept" {
		t.Fatalf("command in a prestarted box: %v %+v", err, res)
	}
	for _, f := range []string{"init.log", "disk.img"} {
		if _, err := os.Stat(filepath.Join(m.StateDir("first"), f)); err != nil {
			t.Fatalf("the box state has no %s: %v", f, err)
		}
	}
	next, nextDisk := waitSpare(t, m)
	if next == spare || nextDisk == disk {
		t.Fatal("the spares were not replaced after use")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{spare, next} {
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !isZombieStat(string(st)) {
			t.Fatalf("init %d still runs after Close", pid)
		}
	}
	if _, err := os.Stat(nextDisk); err == nil {
		t.Fatal("Close left the unused prepared disk image behind")
	}
	if dev := loopDeviceFor(nextDisk); dev != "" {
		t.Fatalf("Close left the prepared disk image mounted (loop device %s)", dev)
	}
	assertLayerReleased(t, m.StateDir("first"))
	if left := managerGroups(m); len(left) > 0 {
		t.Fatalf("Close left cgroups behind: %q", left)
	}
}
