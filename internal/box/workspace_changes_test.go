package box

import (
	"context"
	"strings"
	"testing"
)

func TestOverlayWorkspaceLayerRefusesOtherWorkspace(t *testing.T) {
	needBoxes(t)
	home := t.TempDir()
	tr := true
	open := func(ws string) error {
		opts := Options{CgroupRoot: testCgroupRoot(), Terminal: testTerminal(ws), Home: home}
		opts.Terminal.ContainerPersistent = &tr
		opts.Terminal.BoxWorkspace = "overlay"
		m, err := NewManager(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		_, err = m.Open(context.Background(), "cow")
		return err
	}
	first := t.TempDir()
	if err := open(first); err != nil {
		t.Fatal(err)
	}
	err := open(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "keeps copy-on-write changes of workspace "+first) {
		t.Fatalf("a copy-on-write layer was put over another workspace: %v", err)
	}
	if err := open(first); err != nil {
		t.Fatalf("the layer's own workspace was refused: %v", err)
	}
}
