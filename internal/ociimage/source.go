package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// sourceKind says where an image spec points.
type sourceKind string

const (
	sourceRegistry sourceKind = "registry" // registry/repo:tag or @sha256:
	sourceLayout   sourceKind = "oci-layout"
	sourceTarball  sourceKind = "docker-archive" // `docker save` output
	// sourceOCIArchive is a tar of an OCI layout (podman save --format
	// oci-archive, buildx type=oci), unpacked to a temporary layout.
	sourceOCIArchive sourceKind = "oci-archive"
)

// source is a parsed image spec.
type source struct {
	kind sourceKind
	key  string         // canonical name the Record is stored under
	ref  name.Reference // registry only
	path string         // layout dir or tarball, absolute
	// layoutDir is where Pull unpacked an oci-archive (read as a layout).
	layoutDir string
}

// IsSpec reports whether terminal.box_image value spec names an OCI
// image rather than something internal/box/image resolves: an existing
// OCI layout directory (it has an oci-layout file) or `docker save`
// tarball (an uncompressed tar with manifest.json at its top), or a
// registry reference with a '/', ':' or '@' (a bare word is a built
// image name; write busybox:latest for the registry's). Specs starting
// with '/' or '.' are paths, never references.
func IsSpec(spec string) bool {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "host" {
		return false
	}
	if _, _, ok := cutTransport(spec); ok {
		return true
	}
	if fi, err := os.Stat(spec); err == nil {
		if fi.IsDir() {
			return isLayoutDir(spec)
		}
		return fi.Mode().IsRegular() && (isDockerArchive(spec) || isOCIArchive(spec))
	}
	if strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, ".") {
		return false
	}
	if !strings.ContainsAny(spec, "/:@") {
		return false
	}
	_, err := name.ParseReference(spec)
	return err == nil
}

func isLayoutDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "oci-layout"))
	return err == nil
}

// isDockerArchive reports whether file is an uncompressed tar with
// manifest.json at its top. Only headers are read (contents are
// skipped), and the scan stops at the first entry a `docker save`
// archive never has (a root filesystem's usr/, etc/... or a path four
// levels deep), so a rootfs tarball costs a few reads.
func isDockerArchive(file string) bool {
	return tarHasTopEntry(file, "manifest.json", func(name string) bool {
		top, _, _ := strings.Cut(name, "/")
		switch top {
		case "bin", "etc", "usr", "lib", "sbin", "var", "lib64", "root", "home", "opt":
			return false
		}
		return strings.Count(strings.TrimSuffix(name, "/"), "/") < 3
	})
}

// tarHasTopEntry reports whether the uncompressed tar file has an entry
// named want (a leading "./" ignored) among its first 10,000 headers,
// stopping at the first entry for which may reports false (an entry the
// format never has). Only headers are read.
func tarHasTopEntry(file, want string, may func(name string) bool) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for range 10000 {
		hdr, err := tr.Next()
		if err != nil {
			return false
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		if name == want {
			return true
		}
		if !may(name) {
			return false
		}
	}
	return false
}

// transportPrefixes are the transport names of containers/image (skopeo,
// podman) and Docker that name a local image by path: the key hermes
// stores an image under (Record.Ref) starts with one of them, so
// `image ls` output can be pasted back as a spec.
var transportPrefixes = map[string]sourceKind{"docker-archive:": sourceTarball, "oci-layout:": sourceLayout, "oci:": sourceLayout,
	"oci-archive:": sourceOCIArchive}

// cutTransport splits a docker-archive:PATH, oci-archive:PATH, oci-layout:PATH or oci:PATH
// spec into its kind and path.
func cutTransport(spec string) (sourceKind, string, bool) {
	for prefix, kind := range transportPrefixes {
		if rest, ok := strings.CutPrefix(spec, prefix); ok && rest != "" {
			return kind, rest, true
		}
	}
	return "", "", false
}

// parseSource parses spec as IsSpec accepts it.
func parseSource(spec string, insecure []string) (source, error) {
	spec = strings.TrimSpace(spec)
	if kind, path, ok := cutTransport(spec); ok {
		if _, err := os.Stat(path); err != nil {
			return source{}, fmt.Errorf("image %q: %w", spec, err)
		}
		src, err := parseSource(path, insecure)
		if err != nil {
			return source{}, err
		}
		if src.kind != kind {
			return source{}, fmt.Errorf("image %q: %s is a %s, not a %s; write %s", spec, path, src.kind, kind, src.key)
		}
		return src, nil
	}
	if fi, err := os.Stat(spec); err == nil {
		abs, err := filepath.Abs(spec)
		if err != nil {
			return source{}, err
		}
		switch {
		case fi.IsDir() && isLayoutDir(abs):
			return source{kind: sourceLayout, key: "oci-layout:" + abs, path: abs}, nil
		case fi.Mode().IsRegular() && isDockerArchive(abs):
			return source{kind: sourceTarball, key: "docker-archive:" + abs, path: abs}, nil
		case fi.Mode().IsRegular() && isOCIArchive(abs):
			return source{kind: sourceOCIArchive, key: "oci-archive:" + abs, path: abs}, nil
		}
		return source{}, fmt.Errorf("image %q is a path but neither an OCI image layout directory (no oci-layout file), an OCI archive (a tar with oci-layout at its top) nor a `docker save` tarball (no manifest.json)", spec)
	}
	var opts []name.Option
	if ref, err := name.ParseReference(spec); err == nil && listed(ref.Context().RegistryStr(), insecure) {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(spec, opts...)
	if err != nil {
		return source{}, fmt.Errorf("image %q is not a valid reference (registry/repository:tag or @sha256:...): %v", spec, err)
	}
	return source{kind: sourceRegistry, key: ref.Name(), ref: ref}, nil
}

func listed(registry string, insecure []string) bool {
	host := registry
	if i := strings.LastIndex(registry, ":"); i > 0 && !strings.HasSuffix(registry, "]") {
		host = registry[:i]
	}
	for _, h := range insecure {
		h = strings.ToLower(strings.TrimSpace(h))
		if h != "" && (h == strings.ToLower(registry) || h == strings.ToLower(host)) {
			return true
		}
	}
	return false
}

// hostPlatform is linux on the Go architecture this binary runs on
// (variant v8 for arm64, v7 for arm, as registries list them).
func hostPlatform() v1.Platform {
	p := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if runtime.GOARCH == "arm" {
		p.Variant = "v7"
	}
	return p
}

// platformMatches reports whether an image for have runs on want: same OS
// and architecture, and the variant when both name one (arm64's is
// often omitted).
func platformMatches(have, want v1.Platform) bool {
	if have.OS != want.OS || have.Architecture != want.Architecture {
		return false
	}
	return have.Variant == "" || want.Variant == "" || have.Variant == want.Variant ||
		(want.Architecture == "arm64" && have.Variant == "v8")
}

// PlatformError is returned for an image with no manifest for the
// wanted platform; Available lists those it has.
type PlatformError struct {
	Spec      string
	Want      v1.Platform
	Available []string
}

func (e *PlatformError) Error() string {
	return fmt.Sprintf("image %s has no %s variant (it has: %s); pick an image built for this host", e.Spec, e.Want.String(), strings.Join(e.Available, ", "))
}

// openImage returns the image spec names for platform want: from an
// index (manifest list) the matching manifest; a single-platform image
// must be for want.
func openImage(ctx context.Context, src source, want v1.Platform, ropts []remote.Option) (v1.Image, error) {
	switch src.kind {
	case sourceLayout, sourceOCIArchive:
		dir := src.path
		if src.kind == sourceOCIArchive {
			dir = src.layoutDir
		}
		lp, err := layout.FromPath(dir)
		if err != nil {
			return nil, fmt.Errorf("OCI layout %s: %w", src.path, err)
		}
		idx, err := lp.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("OCI layout %s: %w", src.path, err)
		}
		return pickFromIndex(src.key, idx, want)
	case sourceTarball:
		img, err := tarball.ImageFromPath(src.path, nil)
		if err != nil {
			return nil, fmt.Errorf("docker archive %s: %w", src.path, err)
		}
		return img, checkPlatform(src.key, img, want)
	}
	desc, err := remote.Get(src.ref, ropts...)
	if err != nil {
		return nil, registryError(ctx, src.ref, err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, registryError(ctx, src.ref, err)
		}
		return pickFromIndex(src.key, idx, want)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, registryError(ctx, src.ref, err)
	}
	if err := checkPlatform(src.key, img, want); err != nil {
		return nil, registryError(ctx, src.ref, err)
	}
	return img, nil
}

// pickFromIndex returns the manifest of idx for want, descending into
// nested indexes (an OCI layout's index.json often points at one).
func pickFromIndex(spec string, idx v1.ImageIndex, want v1.Platform) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image %s: index: %w", spec, err)
	}
	var available []string
	for _, d := range im.Manifests {
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("image %s: index %s: %w", spec, d.Digest, err)
			}
			img, err := pickFromIndex(spec, child, want)
			var perr *PlatformError
			if errors.As(err, &perr) {
				available = append(available, perr.Available...)
				continue
			}
			return img, err
		case d.MediaType.IsImage():
			if d.Platform == nil {
				img, err := idx.Image(d.Digest)
				if err != nil {
					return nil, fmt.Errorf("image %s: %w", spec, err)
				}
				if perr := checkPlatform(spec, img, want); perr != nil {
					var pe *PlatformError
					if errors.As(perr, &pe) {
						available = append(available, pe.Available...)
						continue
					}
					return nil, perr
				}
				return img, nil
			}
			if d.Platform.OS == "unknown" { // attestation manifests
				continue
			}
			if platformMatches(*d.Platform, want) {
				img, err := idx.Image(d.Digest)
				if err != nil {
					return nil, fmt.Errorf("image %s: %w", spec, err)
				}
				return img, nil
			}
			available = append(available, d.Platform.String())
		}
	}
	return nil, &PlatformError{Spec: spec, Want: want, Available: available}
}

// checkPlatform refuses a single-platform image built for another
// platform than want.
func checkPlatform(spec string, img v1.Image, want v1.Platform) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("image %s: config: %w", spec, err)
	}
	have := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if have.OS == "" && have.Architecture == "" {
		return nil // an image that does not say: taken as the host's
	}
	if !platformMatches(have, want) {
		return &PlatformError{Spec: spec, Want: want, Available: []string{have.String()}}
	}
	return nil
}

// registryError turns what go-containerregistry returns for ref into an
// error that names the registry, the status and the fix.
func registryError(ctx context.Context, ref name.Reference, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
		return fmt.Errorf("pull %s: %w (check the registry or the network, then pull again)", ref.Name(), cause)
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		reg := ref.Context().RegistryStr()
		switch terr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("pull %s: registry %s refused access (HTTP %d): log in with `podman login %s` or `docker login %s` (credentials are read from ~/.docker/config.json or $REGISTRY_AUTH_FILE)", ref.Name(), reg, terr.StatusCode, reg, reg)
		case http.StatusNotFound:
			return fmt.Errorf("pull %s: registry %s has no such image (HTTP 404): check the repository %s and the tag or digest %s", ref.Name(), reg, ref.Context().RepositoryStr(), ref.Identifier())
		}
		return fmt.Errorf("pull %s: registry %s answered HTTP %d: %v", ref.Name(), reg, terr.StatusCode, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("pull %s: the registry closed the connection early: %w", ref.Name(), err)
	}
	return fmt.Errorf("pull %s: %w", ref.Name(), err)
}

// CanonicalRef returns the name spec's image is stored under (Record.Ref):
// the full reference (docker.io/library/busybox:latest for busybox:latest)
// or oci-layout:/oci-archive:/docker-archive: and the absolute path.
func CanonicalRef(spec string) (string, error) {
	src, err := parseSource(spec, nil)
	return src.key, err
}
