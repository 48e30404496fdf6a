package ociimage

import (
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ImageConfig is the part of an image's config (image-spec config.md)
// a box applies.
type ImageConfig struct {
	Env          []string `json:"env,omitempty"`         // KEY=value, in order
	WorkingDir   string   `json:"working_dir,omitempty"` // absolute path inside the image
	User         string   `json:"user,omitempty"`        // user[:group], names or ids
	Entrypoint   []string `json:"entrypoint,omitempty"`
	Cmd          []string `json:"cmd,omitempty"`
	ExposedPorts []string `json:"exposed_ports,omitempty"` // "80/tcp", sorted
}

func configFrom(cf *v1.ConfigFile) ImageConfig {
	c := cf.Config
	out := ImageConfig{Env: c.Env, WorkingDir: c.WorkingDir, User: c.User, Entrypoint: c.Entrypoint, Cmd: c.Cmd}
	for port := range c.ExposedPorts {
		out.ExposedPorts = append(out.ExposedPorts, port)
	}
	sort.Strings(out.ExposedPorts)
	return out
}

// Command returns Entrypoint followed by Cmd: what the image runs when
// started without a command.
func (c ImageConfig) Command() []string {
	return append(append([]string(nil), c.Entrypoint...), c.Cmd...)
}
