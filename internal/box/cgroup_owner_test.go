package box

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
)

func TestBoxGroupNameParsesBack(t *testing.T) {
	g := boxGroup{owner: groupOwner{pid: 4242, start: 987654}, home: homeKey("/srv/h"), id: newGroupID(), task: "task_with_under-scores.1"}
	got, ok := parseBoxGroup(g.name())
	if !ok || got != g {
		t.Fatalf("parseBoxGroup(%q) = %+v %v, want %+v", g.name(), got, ok, g)
	}
	g.task = spareGroupTask
	if got, ok := parseBoxGroup(g.name()); !ok || got != g {
		t.Fatalf("spare group %q parsed as %+v %v", g.name(), got, ok)
	}
	for _, bad := range []string{"task-1", ".spare-abc", "12_34_home", "x_34_home_id_task", "12_34_home_id_.evil"} {
		if _, ok := parseBoxGroup(bad); ok {
			t.Errorf("%q parsed as a box group", bad)
		}
	}
	if homeKey("/a/b") == homeKey("/a/c") || homeKey("/a/b/") != homeKey("/a/b") {
		t.Error("homeKey does not name HERMES_HOME")
	}
}

// TestBoxSameTaskInTwoHomesKeepsRunning: two HERMES_HOMEs run a box of
// the same task name; closing one must not touch the other (the groups
// were both hermes/<task>, so Close killed the other box's processes).
func TestBoxSameTaskInTwoHomesKeepsRunning(t *testing.T) {
	needBoxes(t)
	ctx := context.Background()
	managers := make([]*Manager, 2)
	for i := range managers {
		m, err := NewManager(Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(t.TempDir()), Home: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		managers[i] = m
	}
	envs := make([]backend.Environment, 2)
	for i, m := range managers {
		env, err := m.Open(ctx, "same-task")
		if err != nil {
			t.Fatal(err)
		}
		envs[i] = env
	}
	p, err := envs[1].Start(ctx, backend.ExecRequest{Command: "sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	b0, _ := managers[0].Box(ctx, "same-task")
	b1, _ := managers[1].Box(ctx, "same-task")
	if b0.cg.Name() == b1.cg.Name() {
		t.Fatalf("both boxes run in cgroup %s", b0.cg.Name())
	}
	sleeping := backend.ExecRequest{Command: "for i in $(seq 200); do pgrep -x sleep >/dev/null && echo alive && exit; sleep 0.05; done"}
	if res, err := envs[1].Exec(ctx, sleeping); err != nil || trimmed(res) != "alive" {
		t.Fatalf("the command did not start: %v %+v", err, res)
	}
	if err := managers[0].Close(); err != nil {
		t.Fatal(err)
	}
	res, err := envs[1].Exec(ctx, backend.ExecRequest{Command: "pgrep -x sleep >/dev/null && echo alive"})
	if err != nil || trimmed(res) != "alive" {
		t.Fatalf("the other home's box lost its command when this one closed: %v %+v", err, res)
	}
	p.Kill()
}

// startOwner starts a process that can own cgroups in a test, killed in
// Cleanup.
func startOwner(t *testing.T) (*exec.Cmd, groupOwner) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	o, err := processOwner(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, o
}

// deadOwner returns the owner tag of a process that has exited.
func deadOwner(t *testing.T) groupOwner {
	cmd, o := startOwner(t)
	cmd.Process.Kill()
	cmd.Wait()
	return o
}

// makeGroups creates root/name in every hierarchy and returns the dirs.
func makeGroups(t *testing.T, root, name string) []string {
	t.Helper()
	var dirs []string
	for _, h := range hierarchyRoots(root) {
		d := filepath.Join(h, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			os.Remove(d)
		}
	})
	return dirs
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestBoxStartSweepsGroupsOfGoneOwners: a box start removes the empty
// groups (and prestarted files) a gone hermes left, and leaves a group
// that still has processes, and the empty group of a live owner.
func TestBoxStartSweepsGroupsOfGoneOwners(t *testing.T) {
	needBoxes(t)
	home := t.TempDir()
	root := testCgroupRoot()
	key := homeKey(home)
	dead := deadOwner(t)
	stale := makeGroups(t, root, boxGroup{owner: dead, home: key, id: "aaaaaaaa", task: "crashed"}.name())
	staleSpare := makeGroups(t, root, boxGroup{owner: dead, home: key, id: "bbbbbbbb", task: spareGroupTask}.name())
	busyProc, _ := startOwner(t)
	busy := makeGroups(t, root, boxGroup{owner: deadOwner(t), home: "otherhome000", id: "cccccccc", task: "busy"}.name())
	for _, d := range busy {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(busyProc.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { busyProc.Process.Kill(); busyProc.Wait(); time.Sleep(50 * time.Millisecond) })
	_, live := startOwner(t)
	liveGroups := makeGroups(t, root, boxGroup{owner: live, home: key, id: "dddddddd", task: "other"}.name())
	spareDir := filepath.Join(home, "boxes", ".spare")
	os.MkdirAll(spareDir, 0o700)
	staleFile := filepath.Join(spareDir, dead.tag()+"_aaaaaaaa.init.log")
	staleTemp := filepath.Join(spareDir, "."+dead.tag()+"_aaaaaaaa.disk.img.tmp123") // killed while copying
	liveFile := filepath.Join(spareDir, live.tag()+"_dddddddd.init.log")
	for _, f := range []string{staleFile, staleTemp, liveFile} {
		os.WriteFile(f, []byte("log"), 0o600)
	}

	m, err := NewManager(Options{CgroupRoot: root, Terminal: testTerminal(t.TempDir()), Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Open(context.Background(), "test-task"); err != nil {
		t.Fatal(err)
	}
	m.Close() // waits for the sweep
	for _, d := range append(stale, staleSpare...) {
		if exists(d) {
			t.Errorf("the sweep left %s (empty, owner gone)", d)
		}
	}
	for _, d := range append(busy, liveGroups...) {
		if !exists(d) {
			t.Errorf("the sweep removed %s (it has processes, or its owner runs)", d)
		}
	}
	if exists(staleFile) || exists(staleTemp) || !exists(liveFile) {
		t.Errorf("spare files: gone owner's kept %v (temp %v), live owner's kept %v", exists(staleFile), exists(staleTemp), exists(liveFile))
	}
	if st, err := processOwner(busyProc.Process.Pid); err != nil || st.pid == 0 {
		t.Fatalf("the sweep killed a process of a group it does not own: %v", err)
	}
	l := cleanLeftovers(home, root, true)
	if !slices.ContainsFunc(l.Busy, func(d string) bool { return strings.HasSuffix(d, "_busy") }) || len(l.Removed) != 0 {
		t.Errorf("leftovers %+v: want the busy group reported and nothing removed", l)
	}
}
