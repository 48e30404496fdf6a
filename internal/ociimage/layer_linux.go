package ociimage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/box/snapshot"
)

// layerMeta is layers/<diffid hex>.json, written before the layer's
// directory is renamed into place.
type layerMeta struct {
	DiffID  string `json:"diff_id"`
	Digest  string `json:"digest"` // of the blob it came from
	Bytes   int64  `json:"bytes"`  // regular file data, 4 KiB blocks
	Entries int64  `json:"entries"`
}

// roomMargin is left free on the file system of the store after a layer.
const roomMargin = 64 << 20

// layerJob is one layer of an image being pulled.
type layerJob struct {
	layer      v1.Layer
	diffID     v1.Hash
	index, of  int
	compressed bool // the blob is Compressed() (verified against its digest), else Uncompressed()
}

// ensureLayer makes layers/<diffID hex> exist, downloading, verifying
// and unpacking the layer when it does not, and returns its metadata.
// On error nothing of it is left in the store.
func (p *puller) ensureLayer(ctx context.Context, job layerJob) (layerMeta, error) {
	dir := filepath.Join(p.store.layersDir(), job.diffID.Hex)
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
		meta, err := p.store.layerMeta(job.diffID.Hex)
		p.report(Progress{Layer: job.index, Layers: job.of, Digest: job.diffID.String(), Phase: PhaseExists, Done: meta.Bytes, Total: meta.Bytes})
		return meta, err
	}
	blob, digest, err := p.download(ctx, job)
	if err != nil {
		return layerMeta{}, err
	}
	defer os.Remove(blob)
	st, err := measureLayer(blob, job.diffID, p.limits())
	if err != nil {
		return layerMeta{}, fmt.Errorf("layer %s: %w", job.diffID, err)
	}
	if err := checkRoom(p.store.layersDir(), st); err != nil {
		return layerMeta{}, fmt.Errorf("layer %s: %w", job.diffID, err)
	}
	p.report(Progress{Layer: job.index, Layers: job.of, Digest: job.diffID.String(), Phase: PhaseUnpack, Total: st.bytes})
	meta := layerMeta{DiffID: job.diffID.String(), Digest: digest, Bytes: st.bytes, Entries: st.entries}
	if err := p.store.unpack(blob, job.diffID.Hex, meta, p.limits()); err != nil {
		return layerMeta{}, fmt.Errorf("layer %s: %w", job.diffID, err)
	}
	p.report(Progress{Layer: job.index, Layers: job.of, Digest: job.diffID.String(), Phase: PhaseDone, Done: st.bytes, Total: st.bytes})
	return meta, nil
}

// download copies the layer's blob to a temporary file in the store,
// checking its size and digest (compressed blobs) on the way, and
// returns the file's path and the digest.
func (p *puller) download(ctx context.Context, job layerJob) (string, string, error) {
	var (
		rc   io.ReadCloser
		want v1.Hash
		size int64 = -1
		err  error
	)
	if job.compressed {
		if want, err = job.layer.Digest(); err == nil {
			if size, err = job.layer.Size(); err == nil {
				rc, err = job.layer.Compressed()
			}
		}
	} else {
		want = job.diffID
		rc, err = job.layer.Uncompressed()
	}
	if err != nil {
		return "", "", p.fail(ctx, fmt.Errorf("layer %s: %w", job.diffID, err))
	}
	defer rc.Close()
	if size > 0 {
		if err := checkRoom(p.store.layersDir(), layerStats{bytes: size}); err != nil {
			return "", "", fmt.Errorf("layer %s: download: %w", want, err)
		}
	}
	f, err := os.CreateTemp(p.store.layersDir(), ".tmp-blob-")
	if err != nil {
		return "", "", err
	}
	sum := sha256.New()
	counter := &progressCounter{p: p, base: Progress{Layer: job.index, Layers: job.of, Digest: want.String(), Phase: PhaseDownload, Total: size}}
	var src io.Reader = p.watch.watch(rc)
	if size >= 0 {
		src = io.LimitReader(src, size+1)
	}
	p.watch.arm()
	n, err := io.Copy(io.MultiWriter(f, sum, counter), src)
	p.watch.stop()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	got := "sha256:" + hex.EncodeToString(sum.Sum(nil))
	switch {
	case err != nil && strings.Contains(err.Error(), "error verifying"):
		// go-containerregistry checks remote blobs as they stream.
		err = fmt.Errorf("layer %s: digest mismatch (altered in the registry or on the way); refused: %w", want, err)
	case err != nil:
		err = p.fail(ctx, fmt.Errorf("layer %s: download: %w", want, err))
	case size >= 0 && n != size:
		err = fmt.Errorf("layer %s: the registry sent %d bytes, the manifest says %d (truncated or altered); refused", want, n, size)
	case job.compressed && want.Algorithm == "sha256" && got != want.String():
		err = fmt.Errorf("layer %s: digest mismatch: the blob received hashes to %s (altered in the registry or on the way); refused", want, got)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", "", err
	}
	return f.Name(), got, nil
}

// fail returns err, or the stall error when the pull was cancelled for
// it.
func (p *puller) fail(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
		return fmt.Errorf("%w for %s: %v", errStalled, p.opts.stallTimeout(), err)
	}
	return err
}

// decompress wraps r by its magic bytes: gzip, zstd or plain tar.
func decompress(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 1<<20)
	magic, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() { zr.Close() }, nil
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, err
		}
		return zr, zr.Close, nil
	}
	return br, func() {}, nil
}

// measureLayer reads the blob once: checks that its uncompressed tar
// hashes to diffID, that every entry translates, and that it stays
// within lim; returns what it holds.
func measureLayer(blob string, diffID v1.Hash, lim layerLimits) (layerStats, error) {
	f, err := os.Open(blob)
	if err != nil {
		return layerStats{}, err
	}
	defer f.Close()
	r, done, err := decompress(f)
	if err != nil {
		return layerStats{}, fmt.Errorf("decompress: %w", err)
	}
	defer done()
	sum := sha256.New()
	tee := io.TeeReader(r, sum)
	st, err := translateLayer(tee, nil, lim)
	if err != nil {
		return st, err
	}
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return st, fmt.Errorf("decompress: %w", err)
	}
	if got := "sha256:" + hex.EncodeToString(sum.Sum(nil)); diffID.Algorithm == "sha256" && got != diffID.String() {
		return st, fmt.Errorf("diff_id mismatch: the layer's tar hashes to %s, the image config says %s (altered); refused", got, diffID)
	}
	return st, nil
}

// checkRoom fails with an error wrapping ENOSPC when dir's file system
// has less than st needs (plus roomMargin) free, in bytes or inodes.
func checkRoom(dir string, st layerStats) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	free := int64(fs.Bavail) * int64(fs.Bsize)
	need := st.bytes + st.entries*512 + roomMargin
	if free < need {
		return fmt.Errorf("needs %d MiB but %s has %d MiB free: %w; free some space (hermes box image prune) or move HERMES_HOME",
			need>>20, dir, free>>20, syscall.ENOSPC)
	}
	if fs.Files > 0 && int64(fs.Ffree) < st.entries+1024 {
		return fmt.Errorf("needs %d inodes but %s has %d free: %w", st.entries, dir, fs.Ffree, syscall.ENOSPC)
	}
	return nil
}

// unpack extracts blob into layers/<hex> through a temporary directory
// renamed into place; on error the temporary directory is removed.
func (s *Store) unpack(blob, hexID string, meta layerMeta, lim layerLimits) error {
	tmp, err := os.MkdirTemp(s.layersDir(), ".tmp-layer-")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	st, err := extractLayer(blob, tmp, lim)
	if err != nil {
		return err
	}
	if err := markOpaque(tmp, st.opaque); err != nil {
		return err
	}
	data, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(s.layersDir(), hexID+".json"), append(data, '\n'), 0o600); err != nil {
		return err
	}
	final := filepath.Join(s.layersDir(), hexID)
	if err := os.Rename(tmp, final); err != nil {
		if fi, serr := os.Lstat(final); serr == nil && fi.IsDir() {
			return nil // another pull unpacked it meanwhile; ours is removed
		}
		return err
	}
	ok = true
	return nil
}

// extractLayer translates blob's layer and writes it below root with
// snapshot.ExtractTree (no write through a symlink, nothing outside root).
func extractLayer(blob, root string, lim layerLimits) (layerStats, error) {
	f, err := os.Open(blob)
	if err != nil {
		return layerStats{}, err
	}
	defer f.Close()
	r, done, err := decompress(f)
	if err != nil {
		return layerStats{}, err
	}
	defer done()
	pr, pw := io.Pipe()
	type result struct {
		st  layerStats
		err error
	}
	res := make(chan result, 1)
	go func() {
		tw := tar.NewWriter(pw)
		st, err := translateLayer(r, tw, lim)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
		res <- result{st, err}
	}()
	err = snapshot.ExtractTree(pr, root, snapshot.ImageLayerPolicy())
	pr.CloseWithError(errors.New("extraction ended"))
	out := <-res
	if err != nil {
		return out.st, fmt.Errorf("unpack: %w", err)
	}
	if out.err != nil {
		return out.st, out.err
	}
	return out.st, nil
}

// markOpaque sets overlay's opaque xattr on each directory of dirs
// (relative to root; made when missing), never following a symlink:
// trusted.overlay.opaque as root, user.overlay.opaque (boxes mounted
// with userxattr) always.
func markOpaque(root string, dirs []string) error {
	if len(dirs) == 0 {
		return nil
	}
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rootFD)
	asRoot := os.Geteuid() == 0
	for _, dir := range dirs {
		fd, err := openDirBeneath(rootFD, dir)
		if err != nil {
			return fmt.Errorf("opaque directory %q: %w", dir, err)
		}
		if asRoot {
			err = unix.Fsetxattr(fd, "trusted.overlay.opaque", []byte("y"), 0)
		}
		uerr := unix.Fsetxattr(fd, "user.overlay.opaque", []byte("y"), 0)
		if !asRoot {
			err = uerr
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("mark %s/%s opaque (setxattr): %w; the file system of HERMES_HOME must support xattrs", root, dir, err)
		}
	}
	return nil
}

// openDirBeneath opens directory rel below rootFD, making missing
// components (0755), with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS.
func openDirBeneath(rootFD int, rel string) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if rel == "." || rel == "" {
		return unix.Openat2(rootFD, ".", how)
	}
	fd, err := unix.Openat2(rootFD, rel, how)
	if !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	cur := "."
	for _, part := range strings.Split(rel, "/") {
		parent, err := unix.Openat2(rootFD, cur, how)
		if err != nil {
			return -1, err
		}
		err = unix.Mkdirat(parent, part, 0o755)
		unix.Close(parent)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
		cur = filepath.Join(cur, part)
	}
	return unix.Openat2(rootFD, rel, how)
}
