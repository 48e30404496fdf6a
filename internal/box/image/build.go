package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/box/snapshot"
	"github.com/hermes-go/hermes/internal/lazyregexp"
)

// DefaultDebianMirror is used when the machine's apt sources name no
// mirror for the requested suite.
const DefaultDebianMirror = "http://deb.debian.org/debian"

// Manifest describes a base image made by Build; it is saved as
// Dir(home)/<name>.json.
type Manifest struct {
	Name    string    `json:"name"`    // e.g. debian-bookworm-minbase; usable as terminal.box_image
	Digest  string    `json:"sha256"`  // hex sha256 of Tarball
	Tarball string    `json:"tarball"` // Dir/<digest>.tar.zst
	Rootfs  string    `json:"rootfs"`  // Dir/<digest>, the extracted root filesystem
	Suite   string    `json:"suite"`   // Debian suite, e.g. bookworm
	Variant string    `json:"variant"` // debootstrap --variant, e.g. minbase
	Mirror  string    `json:"mirror"`  // archive URL debootstrap fetched from
	Size    int64     `json:"size"`    // bytes of Tarball
	Created time.Time `json:"created"` // UTC
}

// BuildOptions configures Build; zero values pick the defaults.
type BuildOptions struct {
	Name        string           // image name; default debian-<suite>-<variant>
	Suite       string           // default bookworm
	Variant     string           // default minbase
	Mirror      string           // default: from AptDir's sources (DebianMirror)
	AptDir      string           // default /etc/apt
	Debootstrap string           // debootstrap program; default found in PATH
	Log         io.Writer        // debootstrap's progress output; nil discards it
	Now         func() time.Time // nil means time.Now
}

// Build makes a Debian root filesystem with
// `debootstrap --variant=<variant> <suite> DIR <mirror>` (about a minute
// and 200 MB for bookworm minbase), packs it as a zstd tarball named by
// its sha256, keeps the tree (device nodes removed: the box mounts its
// own /dev) as Dir(home)/<sha256>/ and writes the Manifest, so
// terminal.box_image can then be the image name. It backs
// `hermes box image build`; it needs root and the debootstrap package.
// Rebuilding a name replaces its manifest; earlier digests stay cached.
func Build(ctx context.Context, home string, opts BuildOptions) (Manifest, error) {
	if opts.Suite == "" {
		opts.Suite = "bookworm"
	}
	if opts.Variant == "" {
		opts.Variant = "minbase"
	}
	if opts.Name == "" {
		opts.Name = "debian-" + opts.Suite + "-" + opts.Variant
	}
	if !isName(opts.Name) {
		return Manifest{}, fmt.Errorf("image name %q: use lowercase letters, digits, '.', '_' and '-' (at most 64)", opts.Name)
	}
	if opts.AptDir == "" {
		opts.AptDir = "/etc/apt"
	}
	if opts.Mirror == "" {
		opts.Mirror = DebianMirror(opts.AptDir, opts.Suite)
	}
	if opts.Debootstrap == "" {
		path, err := exec.LookPath("debootstrap")
		if err != nil {
			return Manifest{}, errors.New("building a base image needs debootstrap, which is not installed; install it with `apt-get install debootstrap`")
		}
		opts.Debootstrap = path
	}
	if os.Geteuid() != 0 {
		return Manifest{}, errors.New("building a base image needs root (debootstrap chroots and creates device nodes); run `sudo hermes box image build`")
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	dir := Dir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Manifest{}, err
	}
	work, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return Manifest{}, err
	}
	defer os.RemoveAll(work)
	rootfs := filepath.Join(work, "rootfs")
	if err := runDebootstrap(ctx, opts, rootfs); err != nil {
		return Manifest{}, err
	}
	if err := removeDeviceNodes(rootfs); err != nil {
		return Manifest{}, err
	}
	tmpTar := filepath.Join(work, "rootfs.tar.zst")
	digest, size, err := pack(rootfs, tmpTar)
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{
		Name:    opts.Name,
		Digest:  digest,
		Tarball: filepath.Join(dir, digest+".tar.zst"),
		Rootfs:  filepath.Join(dir, digest),
		Suite:   opts.Suite,
		Variant: opts.Variant,
		Mirror:  opts.Mirror,
		Size:    size,
		Created: now().UTC().Truncate(time.Second),
	}
	if err := os.Rename(tmpTar, m.Tarball); err != nil {
		return Manifest{}, err
	}
	if !looksLikeRootfs(m.Rootfs) {
		if err := os.Chmod(rootfs, 0o755); err != nil {
			return Manifest{}, err
		}
		if err := os.Rename(rootfs, m.Rootfs); err != nil {
			return Manifest{}, err
		}
	}
	if err := recordBuiltTarball(home, m); err != nil {
		return Manifest{}, err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := atomicfile.Write(filepath.Join(dir, m.Name+".json"), append(data, '\n'), 0o600); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// LoadManifest reads the manifest of the built image name; a missing
// image wraps fs.ErrNotExist.
func LoadManifest(home, name string) (Manifest, error) {
	if !isName(name) {
		return Manifest{}, fmt.Errorf("image name %q: %w", name, fs.ErrNotExist)
	}
	path := filepath.Join(Dir(home), name+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("image manifest %s is damaged: %w; rebuild with `hermes box image build`", path, err)
	}
	return m, nil
}

// runDebootstrap runs debootstrap into rootfs; its output goes to
// opts.Log and the tail of it into the error.
func runDebootstrap(ctx context.Context, opts BuildOptions, rootfs string) error {
	args := []string{"--variant=" + opts.Variant, opts.Suite, rootfs, opts.Mirror}
	cmd := exec.CommandContext(ctx, opts.Debootstrap, args...)
	var tail tailBuffer
	out := io.Writer(&tail)
	if opts.Log != nil {
		out = io.MultiWriter(opts.Log, &tail)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s failed (%v); last output:\n%s", opts.Debootstrap, strings.Join(args, " "), err, tail.String())
	}
	if !looksLikeRootfs(rootfs) {
		return fmt.Errorf("%s %s produced no usr/ or bin/ in %s", opts.Debootstrap, strings.Join(args, " "), rootfs)
	}
	return nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ buf []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = slices.Clone(t.buf[len(t.buf)-4096:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }

// removeDeviceNodes deletes block and character devices under root.
func removeDeviceNodes(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&(fs.ModeDevice|fs.ModeCharDevice) != 0 {
			return os.Remove(path)
		}
		return nil
	})
}

// pack writes root as a zstd tarball to dst (fsynced) and returns
// its sha256 and size.
func pack(root, dst string) (string, int64, error) {
	f, err := os.Create(dst)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	sum := sha256.New()
	enc, err := zstd.NewWriter(io.MultiWriter(f, sum), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return "", 0, err
	}
	if err := snapshot.PackTree(root, enc); err != nil {
		enc.Close()
		return "", 0, err
	}
	if err := enc.Close(); err != nil {
		return "", 0, err
	}
	if err := f.Sync(); err != nil {
		return "", 0, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(sum.Sum(nil)), size, nil
}

// recordBuiltTarball stores the digest record of a freshly built
// tarball so Resolve on its path does not hash it again.
func recordBuiltTarball(home string, m Manifest) error {
	fi, err := os.Stat(m.Tarball)
	if err != nil {
		return err
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	key := sha256.Sum256([]byte(m.Tarball))
	return saveTarballRecord(filepath.Join(Dir(home), "tarballs", hex.EncodeToString(key[:16])+".json"),
		tarballRecord{Path: m.Tarball, Size: fi.Size(), MtimeNS: fi.ModTime().UnixNano(), Inode: ino, Digest: m.Digest})
}

// DebianMirror returns the archive URL that the apt sources under aptDir
// (sources.list, sources.list.d/*.list in one-line format and
// sources.list.d/*.sources in deb822 format, see sources.list(5)) use for
// suite, or DefaultDebianMirror when none does.
func DebianMirror(aptDir, suite string) string {
	files := []string{filepath.Join(aptDir, "sources.list")}
	for _, pattern := range []string{"*.list", "*.sources"} {
		matches, _ := filepath.Glob(filepath.Join(aptDir, "sources.list.d", pattern))
		slices.Sort(matches)
		files = append(files, matches...)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var uri string
		if strings.HasSuffix(file, ".sources") {
			uri = mirrorFromDeb822(data, suite)
		} else {
			uri = mirrorFromOneLine(data, suite)
		}
		if uri != "" {
			return strings.TrimSuffix(uri, "/")
		}
	}
	return DefaultDebianMirror
}

// mirrorFromOneLine scans "deb [options] URI SUITE COMPONENTS…" lines.
func mirrorFromOneLine(data []byte, suite string) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "deb" {
			continue
		}
		fields = fields[1:]
		if strings.HasPrefix(fields[0], "[") {
			for len(fields) > 0 && !strings.HasSuffix(fields[0], "]") {
				fields = fields[1:]
			}
			if len(fields) > 0 {
				fields = fields[1:]
			}
		}
		if len(fields) >= 2 && fields[1] == suite && usableMirror(fields[0]) {
			return fields[0]
		}
	}
	return ""
}

// deb822StanzaBreak separates deb822 stanzas (blank lines).
var deb822StanzaBreak = lazyregexp.New(`\n[ \t]*\n`)

// mirrorFromDeb822 scans deb822 stanzas with Types, URIs, Suites and
// an optional Enabled field.
func mirrorFromDeb822(data []byte, suite string) string {
	for _, stanza := range deb822StanzaBreak().Split(string(data), -1) {
		fields := map[string]string{}
		var last string
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			if (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) && last != "" {
				fields[last] += " " + strings.TrimSpace(line)
				continue
			}
			key, value, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(key))
			fields[last] = strings.TrimSpace(value)
		}
		if strings.EqualFold(fields["enabled"], "no") ||
			!slices.Contains(strings.Fields(fields["types"]), "deb") ||
			!slices.Contains(strings.Fields(fields["suites"]), suite) {
			continue
		}
		for _, uri := range strings.Fields(fields["uris"]) {
			if usableMirror(uri) {
				return uri
			}
		}
	}
	return ""
}

// usableMirror accepts the URI schemes debootstrap can fetch from.
func usableMirror(uri string) bool {
	for _, scheme := range []string{"http://", "https://", "file:/"} {
		if strings.HasPrefix(uri, scheme) {
			return true
		}
	}
	return false
}
