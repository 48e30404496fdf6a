package cli

import (
	"slices"
	"testing"

	"github.com/hermes-go/hermes/internal/ociimage"
)

// box start --image runs what docker run would: Entrypoint + Cmd without a
// CMD, Entrypoint + CMD with one, in the image's WorkingDir unless -w.
func TestImageStartCommandAsDockerRun(t *testing.T) {
	img := &ociimage.BoxImage{Config: ociimage.ImageConfig{Entrypoint: []string{"/bin/sh", "-c"}, Cmd: []string{"exec sleep 60"}, WorkingDir: "/srv"}}
	cases := []struct {
		name     string
		u        *ociimage.BoxImage
		argv     []string
		workdir  string
		wantArgv []string
		wantDir  string
	}{
		{"no CMD: Entrypoint+Cmd", img, nil, "", []string{"/bin/sh", "-c", "exec sleep 60"}, "/srv"},
		{"CMD replaces Cmd", img, []string{"echo hi"}, "", []string{"/bin/sh", "-c", "echo hi"}, "/srv"},
		{"-w wins", img, nil, "/tmp", []string{"/bin/sh", "-c", "exec sleep 60"}, "/tmp"},
		{"Cmd only", &ociimage.BoxImage{Config: ociimage.ImageConfig{Cmd: []string{"hermes", "gateway", "run"}}}, nil, "", []string{"hermes", "gateway", "run"}, ""},
		{"Cmd only, CMD given", &ociimage.BoxImage{Config: ociimage.ImageConfig{Cmd: []string{"hermes"}}}, []string{"id"}, "", []string{"id"}, ""},
		{"neither: waits for commands", &ociimage.BoxImage{}, nil, "", nil, ""},
		{"not an image box", nil, []string{"id"}, "/w", []string{"id"}, "/w"},
	}
	for _, c := range cases {
		argv, dir := imageStartCommand(c.u, c.argv, c.workdir)
		if !slices.Equal(argv, c.wantArgv) || dir != c.wantDir {
			t.Errorf("%s: got %q in %q, want %q in %q", c.name, argv, dir, c.wantArgv, c.wantDir)
		}
	}
	if len(img.Config.Entrypoint) != 2 {
		t.Errorf("the image's Entrypoint was changed: %q", img.Config.Entrypoint)
	}
}
