package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/box/image"
)

// newBoxImageCmd is `hermes box image build`: a Debian minbase rootfs made
// with debootstrap and cached under HERMES_HOME/boxes/images, usable as
// terminal.box_image; and `pull|ls|rm|prune` for OCI images
// (box_image_oci.go).
func (a *App) newBoxImageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "build or pull base images for boxes: build, pull, ls, rm, prune", Args: cobra.NoArgs}
	var opts image.BuildOptions
	build := &cobra.Command{
		Use:   "build",
		Short: "build a Debian rootfs with debootstrap (needs root and the debootstrap package)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Log = a.Stderr
			m, err := image.Build(cmd.Context(), a.Home(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "built image %s (%s, %d bytes)\nrootfs: %s\nuse it with: hermes config set terminal.box_image %s\n",
				m.Name, m.Digest[:12], m.Size, m.Rootfs, m.Name)
			return nil
		},
	}
	build.Flags().StringVar(&opts.Name, "name", "", "image name (default debian-<suite>-<variant>)")
	build.Flags().StringVar(&opts.Suite, "suite", "", "Debian suite (default bookworm)")
	build.Flags().StringVar(&opts.Variant, "variant", "", "debootstrap variant (default minbase)")
	build.Flags().StringVar(&opts.Mirror, "mirror", "", "Debian mirror URL (default: from /etc/apt sources)")
	cmd.AddCommand(build)
	cmd.AddCommand(a.newBoxImageOCICmds()...)
	return cmd
}
