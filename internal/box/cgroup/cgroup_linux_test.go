package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCgroup2 makes a directory that looks like a cgroup2 root with the
// given controllers; the kernel would create cgroup.controllers in each
// new child, so the fake pre-creates it for "hermes".
func fakeCgroup2(t *testing.T, controllers string) string {
	root := t.TempDir()
	for _, d := range []string{root, filepath.Join(root, "hermes")} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "cgroup.controllers"), []byte(controllers+"\n"), 0o644)
	}
	return root
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestCgroupV2WritesLimits(t *testing.T) {
	root := fakeCgroup2(t, "cpuset cpu io memory pids")
	g, err := newCgroupV2(root, "hermes/task-1", Limits{MemoryBytes: 512 << 20, PIDs: 100, CPUs: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "hermes/task-1")
	want := map[string]string{
		"memory.max": "536870912", "memory.swap.max": "0", "pids.max": "100", "cpu.max": "150000 100000",
	}
	for f, v := range want {
		if got := readFile(t, filepath.Join(dir, f)); got != v {
			t.Errorf("%s = %q, want %q", f, got, v)
		}
	}
	for _, d := range []string{root, filepath.Join(root, "hermes")} {
		if got := readFile(t, filepath.Join(d, "cgroup.subtree_control")); got != "+memory +pids +cpu" {
			t.Errorf("%s/cgroup.subtree_control = %q", d, got)
		}
	}
	if err := g.Add(4242); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "cgroup.procs")); got != "4242" {
		t.Errorf("cgroup.procs = %q", got)
	}
	os.WriteFile(filepath.Join(dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte("usage_usec 1500000\nnr_periods 10\nnr_throttled 7\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pids.current"), []byte("5\n"), 0o644)
	st, _ := g.Stats()
	if st.OOMKills != 2 || st.ThrottledPeriod != 7 || st.PIDs != 5 || st.CPUUsage.Seconds() != 1.5 {
		t.Errorf("stats %+v", st)
	}
}

func TestCgroupV2MissingControllerNamesIt(t *testing.T) {
	root := fakeCgroup2(t, "cpuset io memory pids")
	_, err := newCgroupV2(root, "hermes/task-1", Limits{MemoryBytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), `"cpu"`) || !strings.Contains(err.Error(), "subtree_control") {
		t.Fatalf("error %v should name the cpu controller and the fix", err)
	}
}

func TestCgroupMountsParsesV1AndV2(t *testing.T) {
	mi := filepath.Join(t.TempDir(), "mountinfo")
	os.WriteFile(mi, []byte(`30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:10 - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:11 - cgroup cgroup rw,cpu,cpuacct
32 25 0:28 / /sys/fs/cgroup/unified rw,relatime shared:12 - cgroup2 cgroup2 rw
`), 0o644)
	v1, v2, err := Mounts(mi)
	if err != nil {
		t.Fatal(err)
	}
	if v1["memory"] != "/sys/fs/cgroup/memory" || v1["cpu"] != "/sys/fs/cgroup/cpu,cpuacct" || v1["cpuacct"] != v1["cpu"] || v1["pids"] != "" {
		t.Errorf("v1 = %v", v1)
	}
	if v2 != "/sys/fs/cgroup/unified" {
		t.Errorf("v2 = %q", v2)
	}
}
