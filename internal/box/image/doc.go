// Package image resolves and builds the base root filesystems of boxes
// (terminal.box_image): "host" (the host's / read-only), a built image by
// name (Build runs debootstrap and caches a zstd tarball and its
// extracted tree under HERMES_HOME/boxes/images), a root filesystem
// directory, or a tarball (.tar, .tar.gz, .tar.zst, .tar.bz2) extracted
// once per content digest.
package image
