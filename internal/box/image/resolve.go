package image

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/box/snapshot"
)

// Host is the terminal.box_image value (and default) that uses the
// host's own root filesystem, read-only, as the box's base layer.
const Host = "host"

// isName reports whether s may name an image made by Build: a
// lower-case letter or digit, then up to 63 of those, '.', '_' or '-'.
func isName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// Dir returns HERMES_HOME/boxes/images, the cache of base images:
// <sha256>/ (an extracted root filesystem, named by the sha256 of the
// tarball it came from), <sha256>.tar.zst (tarballs made by Build),
// <name>.json (Manifest of a built image) and tarballs/ (digests of
// user tarballs keyed by path, size and mtime, so they are hashed once).
func Dir(home string) string {
	return filepath.Join(home, "boxes", "images")
}

// Resolve turns a terminal.box_image value into the directory to use
// as the box's read-only lower layer:
//   - "" or "host": "/" (the host root);
//   - the name of an image made by Build (e.g.
//     "debian-bookworm-minbase"): its extracted root filesystem;
//   - a directory: that directory (absolute), which must look like a root
//     filesystem (usr/ or bin/ at its top);
//   - a tarball (.tar, gzip, zstd or bzip2 compressed; detected by content):
//     extracted once into Dir(home)/<sha256 of the tarball>/ and
//     that path returned on every later call.
//
// Errors name the value and say what is accepted.
func Resolve(home, spec string) (string, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == Host {
		return "/", nil
	}
	if isName(spec) {
		if m, err := LoadManifest(home, spec); err == nil {
			if looksLikeRootfs(m.Rootfs) {
				return m.Rootfs, nil
			}
			return resolveTarball(home, m.Tarball)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	abs, err := filepath.Abs(spec)
	if err != nil {
		return "", fmt.Errorf("terminal.box_image %q: %w", spec, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("terminal.box_image %q: no such built image, directory or tarball; use %q, a root filesystem directory, a .tar/.tar.gz/.tar.zst file, or build one with `hermes box image build`", spec, Host)
	}
	if err != nil {
		return "", fmt.Errorf("terminal.box_image %q: %w", spec, err)
	}
	switch {
	case fi.IsDir():
		if !looksLikeRootfs(abs) {
			return "", fmt.Errorf("terminal.box_image %q is a directory but not a root filesystem (no usr/ or bin/ inside); point it at a rootfs such as one made by `hermes box image build`", spec)
		}
		return abs, nil
	case fi.Mode().IsRegular():
		return resolveTarball(home, abs)
	}
	return "", fmt.Errorf("terminal.box_image %q is neither a directory nor a regular file", spec)
}

// looksLikeRootfs reports whether dir has usr/ or bin/ at its top.
func looksLikeRootfs(dir string) bool {
	for _, sub := range []string{"usr", "bin"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// tarballRecord caches the digest of a user tarball; it is trusted
// while path, size, mtime and inode are unchanged.
type tarballRecord struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	Inode   uint64 `json:"inode"`
	Digest  string `json:"sha256"`
}

// resolveTarball returns the extracted root of the tarball at abs,
// extracting it on first use.
func resolveTarball(home, abs string) (string, error) {
	digest, err := tarballDigest(home, abs)
	if err != nil {
		return "", err
	}
	rootfs := filepath.Join(Dir(home), digest)
	if looksLikeRootfs(rootfs) {
		return rootfs, nil
	}
	if err := extractTarball(abs, rootfs); err != nil {
		return "", err
	}
	return rootfs, nil
}

// tarballDigest returns the hex sha256 of the file at abs, from the
// record cache when the file is unchanged.
func tarballDigest(home, abs string) (string, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("terminal.box_image %s: %w", abs, err)
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	key := sha256.Sum256([]byte(abs))
	recordPath := filepath.Join(Dir(home), "tarballs", hex.EncodeToString(key[:16])+".json")
	want := tarballRecord{Path: abs, Size: fi.Size(), MtimeNS: fi.ModTime().UnixNano(), Inode: ino}
	if data, err := os.ReadFile(recordPath); err == nil {
		var rec tarballRecord
		if json.Unmarshal(data, &rec) == nil && rec.Digest != "" {
			cached := rec
			cached.Digest = ""
			if cached == want {
				return rec.Digest, nil
			}
		}
	}
	f, err := os.Open(abs)
	if err != nil {
		return "", fmt.Errorf("terminal.box_image %s: %w", abs, err)
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", fmt.Errorf("terminal.box_image %s: %w", abs, err)
	}
	want.Digest = hex.EncodeToString(sum.Sum(nil))
	if err := saveTarballRecord(recordPath, want); err != nil {
		return "", err
	}
	return want.Digest, nil
}

func saveTarballRecord(recordPath string, rec tarballRecord) error {
	if err := os.MkdirAll(filepath.Dir(recordPath), 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(recordPath, append(data, '\n'), 0o600)
}

// extractTarball extracts the tarball at src into rootfs through a
// temporary sibling directory and a rename, so a half-extracted image is
// never used. Device nodes are skipped (the box mounts its own /dev).
func extractTarball(src, rootfs string) error {
	parent := filepath.Dir(rootfs)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("terminal.box_image %s: %w", src, err)
	}
	defer f.Close()
	r, closeReader, err := decompressor(f)
	if err != nil {
		return fmt.Errorf("terminal.box_image %s: %w", src, err)
	}
	defer closeReader()
	tmp, err := os.MkdirTemp(parent, ".extract-")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := snapshot.ExtractTree(r, tmp, snapshot.ExtractPolicy{}); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("terminal.box_image %s: extract: %w", src, err)
	}
	if !looksLikeRootfs(tmp) {
		os.RemoveAll(tmp)
		return fmt.Errorf("terminal.box_image %s: the tarball has no usr/ or bin/ at its top, so it is not a root filesystem (tarballs with one top-level directory need repacking from inside it: tar -C DIR -czf image.tar.gz .)", src)
	}
	if err := os.Rename(tmp, rootfs); err != nil {
		os.RemoveAll(tmp)
		if looksLikeRootfs(rootfs) { // another process won the race
			return nil
		}
		return fmt.Errorf("terminal.box_image %s: %w", src, err)
	}
	return nil
}

// decompressor wraps r according to its magic bytes: gzip (RFC
// 1952), zstd (RFC 8878), bzip2, or an uncompressed tar. xz is refused
// with a hint to recompress.
func decompressor(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 1<<20)
	magic, _ := br.Peek(6)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() { zr.Close() }, nil
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return zr, zr.Close, nil
	case bytes.HasPrefix(magic, []byte("BZh")):
		return bzip2.NewReader(br), func() {}, nil
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return nil, nil, errors.New("xz tarballs are not supported; recompress with: xz -dc IMAGE.tar.xz | zstd -o IMAGE.tar.zst")
	}
	return br, func() {}, nil
}
