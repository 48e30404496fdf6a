package ociimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/atomicfile"
)

// Options configures a Store. The zero value pulls for the host's
// platform with the default keychain.
type Options struct {
	// Insecure lists registries (host or host:port) that may be reached
	// over plain HTTP besides loopback ones.
	Insecure []string
	// Platform to pull; default linux/<this binary's GOARCH>.
	Platform *v1.Platform
	// Progress, when set, is called as layers download and unpack.
	Progress func(Progress)
	// StallTimeout fails a pull whose registry sends nothing for this
	// long (default 60 s).
	StallTimeout time.Duration
	// MaxLayerBytes bounds what one layer may unpack to (default 64 GiB);
	// MaxLayerEntries its entries (default 4 million).
	MaxLayerBytes   int64
	MaxLayerEntries int64
	// Keychain for registry credentials; default authn.DefaultKeychain
	// (~/.docker/config.json, $REGISTRY_AUTH_FILE, containers/auth.json).
	Keychain authn.Keychain
}

func (o Options) stallTimeout() time.Duration {
	if o.StallTimeout > 0 {
		return o.StallTimeout
	}
	return defaultStallTimeout
}

// Progress is one step of a pull. Layers are numbered from 1.
type Progress struct {
	Layer, Layers int
	Digest        string
	Phase         string // PhaseDownload, PhaseUnpack, PhaseDone or PhaseExists
	Done, Total   int64  // bytes; Total -1 when unknown
}

// Phases of Progress.
const (
	PhaseDownload = "download"
	PhaseUnpack   = "unpack"
	PhaseDone     = "done"
	PhaseExists   = "exists"
)

// Store is the image store of one HERMES_HOME.
type Store struct {
	dir  string
	opts Options
}

// Dir returns HERMES_HOME/images.
func Dir(home string) string { return filepath.Join(home, "images") }

// Open returns the store of home (nothing is created until a pull).
func Open(home string, opts Options) *Store {
	return &Store{dir: Dir(home), opts: opts}
}

func (s *Store) layersDir() string { return filepath.Join(s.dir, "layers") }
func (s *Store) refsDir() string   { return filepath.Join(s.dir, "refs") }

// Record is refs/<key>.json: one pulled image.
type Record struct {
	Ref      string        `json:"ref"`    // canonical reference or oci-layout:/docker-archive: path
	Source   string        `json:"source"` // registry, oci-layout, oci-archive or docker-archive
	Digest   string        `json:"digest"` // manifest digest
	Platform string        `json:"platform"`
	Layers   []RecordLayer `json:"layers"` // bottom first, as in the manifest
	Config   ImageConfig   `json:"config"`
	Pulled   time.Time     `json:"pulled"`
}

// RecordLayer is one layer of a Record.
type RecordLayer struct {
	DiffID string `json:"diff_id"`
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
}

// LowerDirs returns the image's unpacked layers as overlay lowerdirs,
// topmost first.
func (s *Store) LowerDirs(r *Record) []string {
	out := make([]string, 0, len(r.Layers))
	for i := len(r.Layers) - 1; i >= 0; i-- {
		out = append(out, filepath.Join(s.layersDir(), strings.TrimPrefix(r.Layers[i].DiffID, "sha256:")))
	}
	return out
}

// Bytes is the unpacked size of the image's layers.
func (r *Record) Bytes() int64 {
	var n int64
	for _, l := range r.Layers {
		n += l.Bytes
	}
	return n
}

func recordKey(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return hex.EncodeToString(sum[:16])
}

// lock takes the store lock, shared or exclusive, creating the store.
// The store is the owner's alone (0700; a store made before is narrowed
// to it): images bring world-writable directories of their own (/tmp,
// 1777), and another local user must not plant files in a layer every box
// of the image sees, nor read the image records' Env.
func (s *Store) lock(how int) (func(), error) {
	for _, d := range []string{s.dir, s.layersDir(), s.refsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("image store lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// puller is one Pull in progress.
type puller struct {
	store *Store
	opts  Options
	watch *stallWatch
}

func (p *puller) report(ev Progress) {
	if p.opts.Progress != nil {
		p.opts.Progress(ev)
	}
}

func (p *puller) limits() layerLimits {
	lim := layerLimits{maxBytes: p.opts.MaxLayerBytes, maxEntries: p.opts.MaxLayerEntries}
	if lim.maxBytes <= 0 {
		lim.maxBytes = 64 << 30
	}
	if lim.maxEntries <= 0 {
		lim.maxEntries = 4 << 20
	}
	return lim
}

type progressCounter struct {
	p    *puller
	base Progress
}

func (c *progressCounter) Write(b []byte) (int, error) {
	c.base.Done += int64(len(b))
	c.p.report(c.base)
	return len(b), nil
}

// Pull fetches the image spec names (see IsSpec) for the platform,
// verifies and unpacks the layers it lacks, and saves its Record.
// Errors name the image and what to do: a registry's 401/403/404, a
// platform the image lacks (*PlatformError), a digest mismatch, a layer
// too big for the disk (wraps ENOSPC) or the limits.
func (s *Store) Pull(ctx context.Context, spec string) (*Record, error) {
	src, err := parseSource(spec, s.opts.Insecure)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &puller{store: s, opts: s.opts, watch: newStallWatch(s.opts.stallTimeout(), cancel)}
	kc := s.opts.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	want := hostPlatform()
	if s.opts.Platform != nil {
		want = *s.opts.Platform
	}
	if src.kind == sourceOCIArchive {
		dir, err := os.MkdirTemp(s.dir, ".oci-archive-")
		if err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
		defer os.RemoveAll(dir)
		if err := extractOCIArchive(src.path, dir); err != nil {
			return nil, fmt.Errorf("image %s: %w", src.key, err)
		}
		src.layoutDir = dir
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc),
		remote.WithTransport(newTransport(s.opts.stallTimeout(), s.opts.Insecure)), remote.WithPlatform(want)}
	img, err := openImage(ctx, src, want, ropts)
	if err != nil {
		return nil, err
	}
	rec, err := p.pullImage(ctx, src, img, want)
	if err != nil {
		if src.kind == sourceRegistry {
			return nil, registryError(ctx, src.ref, err)
		}
		return nil, fmt.Errorf("image %s: %w", src.key, err)
	}
	return rec, nil
}

// pullImage ensures every layer of img and writes its Record.
func (p *puller) pullImage(ctx context.Context, src source, img v1.Image, want v1.Platform) (*Record, error) {
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) != len(cf.RootFS.DiffIDs) {
		return nil, fmt.Errorf("the manifest has %d layers but the config lists %d diff_ids; refused", len(layers), len(cf.RootFS.DiffIDs))
	}
	rec := &Record{Ref: src.key, Source: string(src.kind), Digest: digest.String(), Platform: want.String(),
		Config: configFrom(cf), Pulled: time.Now().UTC()}
	if cf.Architecture != "" {
		rec.Platform = (&v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}).String()
	}
	for i, l := range layers {
		job := layerJob{layer: l, diffID: cf.RootFS.DiffIDs[i], index: i + 1, of: len(layers), compressed: src.kind != sourceTarball}
		meta, err := p.ensureLayer(ctx, job)
		if err != nil {
			return nil, err
		}
		rec.Layers = append(rec.Layers, RecordLayer{DiffID: meta.DiffID, Digest: meta.Digest, Bytes: meta.Bytes})
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(p.store.refsDir(), recordKey(src.key)+".json"), append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	return rec, nil
}

// layerMeta reads layers/<hex>.json; a missing one (a store written by
// a killed pull between rename and metadata) yields zero sizes.
func (s *Store) layerMeta(hexID string) (layerMeta, error) {
	meta := layerMeta{DiffID: "sha256:" + hexID}
	data, err := os.ReadFile(filepath.Join(s.layersDir(), hexID+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return meta, nil
	}
	if err != nil {
		return meta, err
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return meta, fmt.Errorf("layer metadata %s.json: %w", hexID, err)
	}
	return meta, nil
}

// Lookup returns the Record of spec when it was pulled and all its
// layers are present; fs.ErrNotExist otherwise.
func (s *Store) Lookup(spec string) (*Record, error) {
	src, err := parseSource(spec, s.opts.Insecure)
	if err != nil {
		return nil, err
	}
	rec, err := s.readRecord(filepath.Join(s.refsDir(), recordKey(src.key)+".json"))
	if err != nil {
		return nil, err
	}
	for _, dir := range s.LowerDirs(rec) {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("image %s: layer %s is missing: %w", rec.Ref, filepath.Base(dir), fs.ErrNotExist)
		}
	}
	return rec, nil
}

// Ensure pulls spec unless Lookup finds it complete in the store (a
// registry tag is not checked again once pulled).
func (s *Store) Ensure(ctx context.Context, spec string) error {
	_, err := s.Lookup(spec)
	if errors.Is(err, fs.ErrNotExist) {
		_, err = s.Pull(ctx, spec)
	}
	return err
}

func (s *Store) readRecord(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("image record %s: %w", path, err)
	}
	return &rec, nil
}

// Records lists the pulled images by reference.
func (s *Store) Records() ([]*Record, error) {
	entries, err := os.ReadDir(s.refsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		rec, err := s.readRecord(filepath.Join(s.refsDir(), e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out, nil
}
