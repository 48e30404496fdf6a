package ociimage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// OCI whiteout names (image-spec layer.md, "Whiteouts").
const (
	whiteoutPrefix = ".wh."
	opaqueMarker   = ".wh..wh..opq"
	paxXattrPrefix = "SCHILY.xattr."
)

// layerLimits bound what one layer may unpack to.
type layerLimits struct {
	maxBytes   int64 // sum of regular file sizes
	maxEntries int64
}

// layerStats is what translating a layer counted.
type layerStats struct {
	bytes   int64 // regular file bytes, each rounded up to a 4 KiB block
	entries int64
	opaque  []string // directories (relative, cleaned) marked opaque
}

// translateLayer copies the OCI layer tar r to tw in the form
// snapshot.ExtractTree writes as an overlay layer: ".wh.NAME" becomes a
// character device 0:0 NAME, ".wh..wh..opq" is dropped and its directory
// recorded in stats.opaque, device nodes are dropped, setuid/setgid bits
// cleared, and xattrs other than user.* (overlay's excepted) and POSIX
// ACLs dropped. Names are made relative ("./" and "/" prefixes removed);
// a ".." component in a name or hardlink target is an error, as is
// passing lim. tw may be nil (measure and check only).
func translateLayer(r io.Reader, tw *tar.Writer, lim layerLimits) (layerStats, error) {
	tr := tar.NewReader(r)
	var st layerStats
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("read layer: %w", err)
		}
		st.entries++
		if st.entries > lim.maxEntries {
			return st, fmt.Errorf("layer has more than %d entries; refused (an archive bomb?)", lim.maxEntries)
		}
		out, err := translateHeader(hdr, &st)
		if err != nil || out == nil {
			if err != nil {
				return st, err
			}
			continue
		}
		if out.Typeflag == tar.TypeReg || out.Typeflag == tar.TypeGNUSparse {
			st.bytes += (out.Size + 4095) &^ 4095
			if st.bytes > lim.maxBytes {
				return st, fmt.Errorf("layer unpacks to more than %d MiB; refused (an archive bomb? raise the limit only for an image you trust)", lim.maxBytes>>20)
			}
		}
		if tw == nil {
			continue
		}
		if err := tw.WriteHeader(out); err != nil {
			return st, fmt.Errorf("layer entry %q: %w", hdr.Name, err)
		}
		if out.Typeflag == tar.TypeReg || out.Typeflag == tar.TypeGNUSparse {
			if _, err := io.Copy(tw, tr); err != nil {
				return st, fmt.Errorf("layer entry %q: %w", hdr.Name, err)
			}
		}
	}
}

// cleanName makes a layer entry name relative and clean; "" is the
// layer's root. ".." components are refused.
func cleanName(name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("layer entry %q has a NUL in its name", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("layer entry %q climbs out of the layer with \"..\"; refused", name)
		}
	}
	c := path.Clean("/" + name)
	return strings.TrimPrefix(c, "/"), nil
}

// translateHeader returns the header to write for hdr, nil to drop it.
func translateHeader(hdr *tar.Header, st *layerStats) (*tar.Header, error) {
	name, err := cleanName(hdr.Name)
	if err != nil {
		return nil, err
	}
	dir, base := path.Split(name)
	dir = path.Clean("/" + dir)[1:]
	if dir == "" {
		dir = "."
	}
	if base == opaqueMarker {
		st.opaque = append(st.opaque, dir)
		return nil, nil
	}
	if strings.HasPrefix(base, whiteoutPrefix) {
		hidden := strings.TrimPrefix(base, whiteoutPrefix)
		if strings.HasPrefix(hidden, whiteoutPrefix) || hidden == "" || hidden == "." {
			return nil, nil // other AUFS metadata (.wh..wh.plnk and such)
		}
		if hidden == ".." {
			return nil, fmt.Errorf("layer entry %q: a whiteout of %q would hide the directory above it", hdr.Name, hidden)
		}
		return &tar.Header{Typeflag: tar.TypeChar, Name: path.Join(dir, hidden), Mode: 0, Uid: hdr.Uid, Gid: hdr.Gid,
			ModTime: hdr.ModTime, Format: tar.FormatPAX}, nil
	}
	out := &tar.Header{Typeflag: hdr.Typeflag, Name: name, Linkname: hdr.Linkname, Size: hdr.Size,
		Mode: hdr.Mode &^ 0o6000, Uid: hdr.Uid, Gid: hdr.Gid, ModTime: hdr.ModTime, Format: tar.FormatPAX}
	if name == "" {
		out.Name = "."
	}
	switch hdr.Typeflag {
	case tar.TypeChar, tar.TypeBlock:
		return nil, nil // device nodes: the box mounts its own /dev
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err != nil {
			return nil, fmt.Errorf("hardlink %q: %w", hdr.Name, err)
		}
		if target == "" {
			return nil, fmt.Errorf("hardlink %q points at the layer root; refused", hdr.Name)
		}
		out.Linkname, out.Size = target, 0
	case tar.TypeReg, tar.TypeGNUSparse, tar.TypeDir, tar.TypeSymlink, tar.TypeFifo:
		if hdr.Typeflag == tar.TypeGNUSparse {
			out.Typeflag = tar.TypeReg
		}
	case tar.TypeXGlobalHeader:
		return nil, nil
	default:
		return nil, fmt.Errorf("layer entry %q has unsupported type %q", hdr.Name, hdr.Typeflag)
	}
	for key, value := range hdr.PAXRecords {
		attr, ok := strings.CutPrefix(key, paxXattrPrefix)
		if !ok || !keptXattr(attr) {
			continue
		}
		if out.PAXRecords == nil {
			out.PAXRecords = map[string]string{}
		}
		out.PAXRecords[key] = value
	}
	return out, nil
}

// keptXattr reports whether an image's xattr is applied: user.* except
// overlay's own, and POSIX ACLs. security.* (capabilities, SELinux
// labels) and trusted.* are dropped.
func keptXattr(attr string) bool {
	if strings.HasPrefix(attr, "user.overlay.") {
		return false
	}
	return strings.HasPrefix(attr, "user.") || attr == "system.posix_acl_access" || attr == "system.posix_acl_default"
}
