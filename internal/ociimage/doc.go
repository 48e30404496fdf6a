// Package ociimage pulls OCI and Docker images (from a registry, an OCI
// image layout directory or a `docker save` tarball) without Docker and
// keeps their layers unpacked, content-addressed, under
// HERMES_HOME/images/, for boxes to stack as read-only overlay lowers.
//
// It is not internal/box/image, which resolves the other kinds of
// terminal.box_image (the host's root, a debootstrap build, a rootfs
// directory or tarball): this package handles only OCI images, and the
// box asks it first (IsSpec) before falling back to that one.
//
// Layout of Dir(home):
//
//	lock                  flock: pulls hold it shared, rm and prune exclusive
//	layers/<diffid hex>/  one unpacked layer (overlay format), named by the
//	                      sha256 of its uncompressed tar (the config's diff_id),
//	                      so images sharing a layer share its directory
//	layers/.tmp-*         a download or unpack in progress (a pull's own;
//	                      prune removes leftovers of a killed pull)
//	refs/<key>.json       one Record per pulled reference
//
// Every layer blob is downloaded to a temporary file and its digest
// checked, then read once to check its diff_id, bound its size and
// entries and measure the room it needs (refused before unpacking when
// the file system lacks it), then unpacked into layers/.tmp-* and renamed
// into place. OCI whiteouts (".wh.NAME") become overlay whiteouts
// (character devices 0:0) and opaque markers (".wh..wh..opq") the
// trusted.overlay.opaque (as root; user.overlay.opaque too, for boxes
// mounted with userxattr) xattr on their directory; setuid/setgid bits,
// device nodes, file capabilities and overlay xattrs an image carries are
// dropped; entries with ".." components, hardlinks out of the layer and
// writes through a symlink are refused (snapshot.ExtractTree). Absolute
// symlinks are kept: a box resolves them against its own root, as
// Debian's /etc/alternatives links need.
//
// Registries: credentials from ~/.docker/config.json ($DOCKER_CONFIG),
// else $REGISTRY_AUTH_FILE or containers/auth.json (authn.DefaultKeychain).
// Plain HTTP is used only for loopback registries (127.0.0.0/8, ::1,
// localhost: traffic that never leaves the host, as Docker allows) and
// for those listed in Options.Insecure (terminal.box_insecure_registries);
// go-containerregistry's own fallback to HTTP for private-range and .local
// registries is refused. A registry that sends no byte for
// Options.StallTimeout (60 s) fails the pull.
package ociimage
