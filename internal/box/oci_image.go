package box

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/ociimage"
)

// An OCI image as terminal.box_image (ociimage.IsSpec: a registry
// reference, an OCI layout directory or a docker save tarball): its
// unpacked layers, pulled on first use, are the box's read-only lowers,
// stacked as the image stacks them (overlay's lowerdir, topmost first)
// under the box's writable layer. A box records the image it was made
// from (ociimage.BoxUsageFile in its state dir) and keeps those layers
// on later starts, whatever the reference points at by then. The
// image's Env applies to the box's commands (baseEnv); WorkingDir is for
// `hermes box exec` (the agent's commands run in the workspace).

// ociStore is the OCI image store of HERMES_HOME.
func (m *Manager) ociStore() *ociimage.Store {
	return ociimage.Open(m.opts.Home, ociimage.Options{Insecure: m.opts.Terminal.BoxInsecureRegistries})
}

// ociRecord returns the pulled image spec names, pulling it when it is
// not in the store yet.
func (m *Manager) ociRecord(spec string) (*ociimage.Record, error) {
	s := m.ociStore()
	rec, err := s.Lookup(spec)
	if errors.Is(err, fs.ErrNotExist) {
		return s.Pull(context.Background(), spec)
	}
	return rec, err
}

// resolveOCIBase returns the lowers of terminal.box_image when it names
// an OCI image (ok true); ok is false for the other kinds.
func (m *Manager) resolveOCIBase() (lower []string, ok bool, err error) {
	spec := strings.TrimSpace(m.opts.Terminal.BoxImage)
	if !ociimage.IsSpec(spec) {
		return nil, false, nil
	}
	rec, err := m.ociRecord(spec)
	if err != nil {
		return nil, true, fmt.Errorf("terminal.box_image %s: %w (a directory or tarball is written /abs/path or ./rel/path)", spec, err)
	}
	return m.ociStore().LowerDirs(rec), true, nil
}

// boxView returns the host view of the box with state dir dir: when it
// records an image, that image's layers as its lowers and nothing of the
// host to show empty or cover (those are for host mode); else view, and
// a box that starts on an OCI terminal.box_image records that image.
func (m *Manager) boxView(task, dir string, view hostView) (hostView, error) {
	u, err := ociimage.ReadBoxImage(dir)
	if err != nil {
		return hostView{}, err
	}
	if u != nil {
		lower, err := m.ociStore().BoxLowerDirs(u)
		return hostView{lower: lower}, err
	}
	spec := m.imageSpec(task)
	if !ociimage.IsSpec(spec) {
		return view, nil
	}
	rec, err := m.ociRecord(spec)
	if err != nil {
		if spec != strings.TrimSpace(m.opts.Terminal.BoxImage) {
			return hostView{}, fmt.Errorf("image %s: %w", spec, err)
		}
		return hostView{}, err
	}
	if err := ociimage.RecordBoxUsage(dir, rec); err != nil {
		return hostView{}, err
	}
	return hostView{lower: m.ociStore().LowerDirs(rec)}, nil
}

// imageSpec is the base image spec of a new box of task: Options.Image's
// when it names one, else terminal.box_image.
func (m *Manager) imageSpec(task string) string {
	if m.opts.Image != nil {
		if spec := strings.TrimSpace(m.opts.Image(task)); spec != "" {
			return spec
		}
	}
	return strings.TrimSpace(m.opts.Terminal.BoxImage)
}

// ownImage reports whether a new box of task gets an image of its own
// (Options.Image) rather than the Manager's base: a prestarted layer,
// laid out for that base, does not fit it.
func (m *Manager) ownImage(task string) bool {
	return m.opts.Image != nil && strings.TrimSpace(m.opts.Image(task)) != ""
}

// ImageWorkdir is the WorkingDir of the OCI image the task's box was
// made from ("" for none, or a box on another base).
func (e *taskEnv) ImageWorkdir() string {
	u, err := ociimage.ReadBoxImage(e.m.StateDir(e.task))
	if err != nil || u == nil {
		return ""
	}
	return u.Config.WorkingDir
}

// ImageAccount is the account the task box's OCI image's User names,
// resolved in the box (Box.imageRunAs); nil when the image names none or
// root, or when the box runs in a user namespace.
func (e *taskEnv) ImageAccount(ctx context.Context) (*backend.Account, error) {
	b, err := e.box(ctx)
	if err != nil {
		return nil, err
	}
	a, err := b.imageRunAs(ctx)
	if err != nil || a == nil {
		return nil, err
	}
	return &backend.Account{UID: a.UID, GID: a.GID}, nil
}

// imageEnv sets in env the image Env of the box with state dir dir
// (over the box's defaults such as PATH; HERMES_SESSION_ID stays).
func imageEnv(dir string, env map[string]string) {
	u, err := ociimage.ReadBoxImage(dir)
	if err != nil || u == nil {
		return
	}
	for _, kv := range u.Config.Env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" && k != "HERMES_SESSION_ID" {
			env[k] = v
		}
	}
}
