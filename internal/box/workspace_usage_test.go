package box

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitDiskOverlayWorkspace: with terminal.box_workspace: overlay, the
// box's writes to the workspace live in its layer and so within
// container_disk, for a tmpfs layer and an ext4 image alike.
func TestLimitDiskOverlayWorkspace(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run(map[bool]string{false: "tmpfs", true: "image"}[persistent], func(t *testing.T) {
			e := startTestBox(t, func(o *Options) {
				o.Terminal.ContainerPersistent = &persistent
				o.Terminal.ContainerDisk = 24
				o.Terminal.BoxWorkspace = "overlay"
			})
			res := e.run(t, "dd if=/dev/zero of=big bs=1M count=48 2>&1; echo rc=$?")
			if !strings.Contains(string(res.Output), "No space left") {
				t.Fatalf("48 MiB written into the overlay workspace of a box with container_disk 24: %s", res.Output)
			}
			if _, err := os.Stat(filepath.Join(e.workspace, "big")); err == nil {
				t.Fatal("the overlay workspace's write reached the host workspace")
			}
		})
	}
}

// TestWorkspaceUsageReportsBindWrites: writes to a bind-mounted workspace
// are not limited by container_disk; WorkspaceUsage (hermes box stats)
// shows them and the mode.
func TestWorkspaceUsageReportsBindWrites(t *testing.T) {
	e := startTestBox(t, func(o *Options) { o.Terminal.ContainerDisk = 16 })
	res := e.run(t, "dd if=/dev/urandom of=big bs=1M count=24 2>&1; echo rc=$?")
	if !strings.Contains(string(res.Output), "rc=0") {
		t.Fatalf("writing 24 MiB to the bound workspace: %s", res.Output)
	}
	ws, err := WorkspaceUsage(e.home, "test-task")
	if err != nil {
		t.Fatal(err)
	}
	if ws.Mode != "bind" || ws.Path != e.m.workspace() || ws.Bytes < 24<<20 {
		t.Fatalf("WorkspaceUsage = %+v, want bind mode, path %s and at least 24 MiB", ws, e.m.workspace())
	}
}
