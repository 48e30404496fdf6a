package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/ociimage"
)

// ociStore opens the OCI image store of HERMES_HOME with the registries
// terminal.box_insecure_registries lists.
func (a *App) ociStore(progress func(ociimage.Progress)) (*ociimage.Store, error) {
	t, err := a.boxTerminalConfig()
	if err != nil {
		return nil, err
	}
	return ociimage.Open(a.Home(), ociimage.Options{Insecure: t.BoxInsecureRegistries, Progress: progress}), nil
}

// newBoxImageOCICmds are `hermes box image pull|ls|rm|prune`: OCI images
// (registry references, OCI layout directories, docker save tarballs)
// kept unpacked under HERMES_HOME/images for terminal.box_image.
func (a *App) newBoxImageOCICmds() []*cobra.Command {
	var quiet bool
	pull := &cobra.Command{
		Use:   "pull REF|OCI-LAYOUT-DIR|DOCKER-SAVE.tar",
		Short: "pull an OCI image (registry/repo:tag, @sha256:...) and unpack its layers for boxes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var bar *pullBar
			if a.IsTerminal && !quiet {
				bar = &pullBar{w: a.Stderr}
			}
			var progress func(ociimage.Progress)
			if bar != nil {
				progress = bar.update
			}
			s, err := a.ociStore(progress)
			if err != nil {
				return err
			}
			rec, err := s.Pull(cmd.Context(), args[0])
			if bar != nil {
				bar.finish()
			}
			if err != nil {
				return err
			}
			if quiet {
				fmt.Fprintln(a.Stdout, rec.Digest)
				return nil
			}
			fmt.Fprintf(a.Stdout, "pulled %s (%s, %s, %d layers, %s)\nuse it with: hermes config set terminal.box_image %s\n",
				rec.Ref, shortDigest(rec.Digest), rec.Platform, len(rec.Layers), humanBytes(rec.Bytes()), rec.Ref)
			return nil
		},
	}
	pull.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the image digest, no progress")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "list pulled OCI images: size, size of layers no other image shares, boxes using each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.ociStore(nil)
			if err != nil {
				return err
			}
			list, err := s.List(a.Home())
			if err != nil {
				return err
			}
			return writeImageTable(a.Stdout, list)
		},
	}
	var force bool
	rm := &cobra.Command{
		Use:   "rm REF...",
		Short: "remove pulled OCI images and the layers no other image uses",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.ociStore(nil)
			if err != nil {
				return err
			}
			for _, ref := range args {
				freed, err := s.Remove(a.Home(), ref, force)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.Stdout, "removed %s (freed %s)\n", ref, humanBytes(freed))
			}
			return nil
		},
	}
	rm.Flags().BoolVarP(&force, "force", "f", false, "remove even when boxes use the image (those boxes lose their base)")
	prune := &cobra.Command{
		Use:   "prune",
		Short: "delete image layers no pulled image uses and what interrupted pulls left",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.ociStore(nil)
			if err != nil {
				return err
			}
			freed, err := s.Prune()
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "freed %s\n", humanBytes(freed))
			return nil
		},
	}
	return []*cobra.Command{pull, ls, rm, prune}
}

func writeImageTable(w io.Writer, list []ociimage.ImageInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tDIGEST\tPLATFORM\tLAYERS\tSIZE\tUNIQUE\tPORTS\tBOXES")
	for _, im := range list {
		boxes := strings.Join(im.Boxes, ",")
		if boxes == "" {
			boxes = "-"
		}
		ports := strings.Join(im.Config.ExposedPorts, ",")
		if ports == "" {
			ports = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", im.Ref, shortDigest(im.Digest), im.Platform, len(im.Layers),
			humanBytes(im.Bytes), humanBytes(im.UniqueBytes), ports, boxes)
	}
	return tw.Flush()
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// humanBytes renders n in B, KiB, MiB or GiB with one decimal.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), []string{"KiB", "MiB", "GiB", "TiB"}
	i := -1
	for v >= unit && i < len(suffix)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, suffix[i])
}

// pullBar draws one status line for a pull on a terminal: the layer,
// its phase and bytes, redrawn in place.
type pullBar struct {
	w       io.Writer
	last    string
	drawn   bool
	lastPct int64
}

func (b *pullBar) update(p ociimage.Progress) {
	pct := int64(-1)
	if p.Total > 0 {
		pct = p.Done * 100 / p.Total
	}
	key := fmt.Sprintf("%d/%s", p.Layer, p.Phase)
	if key == b.last && pct == b.lastPct {
		return
	}
	b.last, b.lastPct = key, pct
	line := fmt.Sprintf("layer %d/%d %s %s", p.Layer, p.Layers, shortDigest(p.Digest), p.Phase)
	switch {
	case p.Phase == ociimage.PhaseDownload && p.Total > 0:
		const width = 24
		filled := int(pct * width / 100)
		line += fmt.Sprintf(" [%s%s] %s / %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), humanBytes(p.Done), humanBytes(p.Total))
	case p.Total > 0:
		line += " " + humanBytes(p.Total)
	}
	fmt.Fprintf(b.w, "\r\x1b[K%s", line)
	b.drawn = true
}

func (b *pullBar) finish() {
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}

// pullBoxImageFirst pulls, here and now, the OCI image a new box of task
// is made from (--image, else terminal.box_image) unless it is stored:
// box start does so before it detaches, so that the pull (its progress
// on a terminal) is not counted in the wait for the detached box, and a
// failed pull leaves no box, log or process behind. A box that exists
// keeps its base: nothing is pulled.
func (a *App) pullBoxImageFirst(ctx context.Context, task, image string) error {
	if image == "" {
		t, err := a.boxTerminalConfig()
		if err != nil {
			return err
		}
		image = t.BoxImage
	}
	image = strings.TrimSpace(image)
	if !ociimage.IsSpec(image) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(a.Home(), "boxes", task)); err == nil {
		return nil
	}
	var bar *pullBar
	var progress func(ociimage.Progress)
	if a.IsTerminal {
		bar = &pullBar{w: a.Stderr}
		progress = bar.update
	}
	s, err := a.ociStore(progress)
	if err != nil {
		return err
	}
	err = s.Ensure(ctx, image)
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		return fmt.Errorf("box %s: image %s: %w", box.QuoteName(task), image, err)
	}
	return nil
}

// boxImageState returns the OCI image the box of task sits on, nil for
// none.
func (a *App) boxImageState(task string) *ociimage.BoxImage {
	u, err := ociimage.ReadBoxImage(filepath.Join(a.Home(), "boxes", task))
	if err != nil {
		return nil
	}
	return u
}

// boxImageColumn is box ls's IMAGE: the OCI image of the box of task and
// the ports the image exposes, "-" for a box on another base.
func (a *App) boxImageColumn(task string) string {
	u := a.boxImageState(task)
	if u == nil {
		return "-"
	}
	if len(u.Config.ExposedPorts) > 0 {
		return u.Ref + " (ports " + strings.Join(u.Config.ExposedPorts, ",") + ")"
	}
	return u.Ref
}

// boxImageWorkdir is the working directory `hermes box exec` runs in for
// the box of task: its OCI image's WorkingDir, "" (the workspace)
// otherwise.
func (a *App) boxImageWorkdir(task string) string {
	if u := a.boxImageState(task); u != nil {
		return u.Config.WorkingDir
	}
	return ""
}

// checkBoxImageFlag refuses --image for a box that exists on another
// base (its writable layer sits on that one) and without --new.
func (a *App) checkBoxImageFlag(task, image string, create bool) error {
	if !create {
		return fmt.Errorf("--image %s applies to a new box: add --new", image)
	}
	if _, err := os.Stat(filepath.Join(a.Home(), "boxes", task)); err != nil {
		return nil // a new box
	}
	u := a.boxImageState(task)
	if u == nil {
		return fmt.Errorf("box %s already exists on another base; --image applies to new boxes only (hermes box rm %s first, or pick another task)", box.QuoteName(task), box.QuoteName(task))
	}
	if ref, err := ociimage.CanonicalRef(image); err != nil || !ociimage.IsSpec(image) || u.Ref != ref {
		return fmt.Errorf("box %s already exists on image %s; --image applies to new boxes only", box.QuoteName(task), u.Ref)
	}
	return nil
}
