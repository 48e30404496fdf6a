package ociimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// maxArchiveEntries bounds the entries an OCI archive may have (an image
// layout holds oci-layout, index.json and one blob per manifest, config
// and layer).
const maxArchiveEntries = 100_000

// isOCIArchive reports whether file is an uncompressed tar of an OCI image
// layout (`podman save --format oci-archive`, buildx --output type=oci):
// an oci-layout file at its top. Only headers are read, and the scan
// stops at the first entry a layout never has (see isDockerArchive).
func isOCIArchive(file string) bool {
	return tarHasTopEntry(file, "oci-layout", func(name string) bool {
		_, ok := layoutEntry(name)
		return ok
	})
}

// layoutEntry cleans name, a tar entry of an OCI archive, and reports
// whether an image layout has such an entry: oci-layout, index.json,
// blobs/ and what is below it (image-spec image-layout.md), relative
// and without "..".
func layoutEntry(name string) (string, bool) {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "./"), "/")
	if name == "" || name == "." {
		return ".", true
	}
	clean := path.Clean(name)
	if clean != name || path.IsAbs(clean) || strings.HasPrefix(clean, "../") || clean == ".." {
		return "", false
	}
	switch {
	case clean == "oci-layout", clean == "index.json", clean == "blobs", strings.HasPrefix(clean, "blobs/"):
		return clean, true
	}
	return "", false
}

// extractOCIArchive unpacks the OCI archive file into dir, an empty
// directory, as an image layout to read with layout.FromPath. Untrusted
// input, so: only directories and regular files (no links of any kind,
// no devices), names from layoutEntry only, written beneath dir through
// os.Root, at most maxArchiveEntries entries and no more bytes than the
// archive's own size (a sparse entry cannot expand on the disk).
func extractOCIArchive(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	budget := fi.Size()
	tr := tar.NewReader(f)
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("OCI archive %s: %w", file, err)
		}
		if n >= maxArchiveEntries {
			return fmt.Errorf("OCI archive %s has more than %d entries; an image layout has a few per layer", file, maxArchiveEntries)
		}
		name, ok := layoutEntry(hdr.Name)
		if !ok {
			return fmt.Errorf("OCI archive %s: entry %q is not part of an OCI image layout (oci-layout, index.json, blobs/)", file, hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name != "." {
				if err := root.MkdirAll(name, 0o700); err != nil {
					return fmt.Errorf("OCI archive %s: %w", file, err)
				}
			}
		case tar.TypeReg:
			if budget -= hdr.Size; budget < 0 {
				return fmt.Errorf("OCI archive %s: its entries hold more bytes than the archive (%d)", file, fi.Size())
			}
			if err := extractArchiveFile(root, name, tr); err != nil {
				return fmt.Errorf("OCI archive %s: %w", file, err)
			}
		default:
			return fmt.Errorf("OCI archive %s: entry %q is a link or special file (type %q); an image layout holds only files and directories", file, hdr.Name, hdr.Typeflag)
		}
	}
}

// extractArchiveFile writes r to a new file name beneath root.
func extractArchiveFile(root *os.Root, name string, r io.Reader) error {
	if d := path.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
