package ociimage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/atomicfile"
)

// BoxUsageFile is the file in a box's state dir (HERMES_HOME/boxes/<task>)
// naming the image its layer sits on; it goes when the box is removed.
const BoxUsageFile = "oci-image.json"

// BoxImage is the content of BoxUsageFile: the image a box was made
// from, pinned to its layers, so that the box keeps its base when the
// reference is pulled again and points at another image.
type BoxImage struct {
	Ref    string      `json:"ref"`
	Digest string      `json:"digest"`
	Layers []string    `json:"layers"` // diff_ids, bottom first
	Config ImageConfig `json:"config"`
}

// RecordBoxUsage writes BoxUsageFile for rec into the box state dir
// stateDir.
func RecordBoxUsage(stateDir string, rec *Record) error {
	u := BoxImage{Ref: rec.Ref, Digest: rec.Digest, Config: rec.Config}
	for _, l := range rec.Layers {
		u.Layers = append(u.Layers, l.DiffID)
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(stateDir, BoxUsageFile), append(data, '\n'), 0o600)
}

// ReadBoxImage returns the image the box in stateDir sits on, nil when
// it sits on none (no BoxUsageFile).
func ReadBoxImage(stateDir string) (*BoxImage, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, BoxUsageFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var u BoxImage
	if err := json.Unmarshal(data, &u); err != nil {
		return nil, fmt.Errorf("box image record %s: %w", filepath.Join(stateDir, BoxUsageFile), err)
	}
	return &u, nil
}

// BoxLowerDirs returns u's layers as overlay lowerdirs, topmost first;
// an error names the image when a layer is gone (removed with rm --force).
func (s *Store) BoxLowerDirs(u *BoxImage) ([]string, error) {
	out := make([]string, 0, len(u.Layers))
	for i := len(u.Layers) - 1; i >= 0; i-- {
		dir := filepath.Join(s.layersDir(), strings.TrimPrefix(u.Layers[i], "sha256:"))
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("the box's image %s lacks layer %s (removed with hermes box image rm --force?): pull %s again, or remove the box", u.Ref, u.Layers[i], u.Ref)
		}
		out = append(out, dir)
	}
	return out, nil
}

// boxImages returns the BoxImage of every box under home/boxes by task.
func boxImages(home string) map[string]*BoxImage {
	out := map[string]*BoxImage{}
	matches, _ := filepath.Glob(filepath.Join(home, "boxes", "*", BoxUsageFile))
	for _, m := range matches {
		if u, err := ReadBoxImage(filepath.Dir(m)); err == nil && u != nil {
			out[filepath.Base(filepath.Dir(m))] = u
		}
	}
	return out
}

// boxesByDigest maps a manifest digest to the boxes (task ids) under
// home/boxes whose layer sits on it.
func boxesByDigest(home string) map[string][]string {
	out := map[string][]string{}
	for task, u := range boxImages(home) {
		out[u.Digest] = append(out[u.Digest], task)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// boxesByRecord gives, for each of recs, the boxes (task ids, sorted) to
// list under it: a box goes under the name it was created from when that
// name still holds its digest (a registry ref and an oci-layout path of
// one image are two rows, each with its own boxes), else under every
// name that holds its digest.
func boxesByRecord(recs []*Record, boxes map[string]*BoxImage) [][]string {
	out := make([][]string, len(recs))
	for task, u := range boxes {
		own := slices.IndexFunc(recs, func(r *Record) bool { return r.Ref == u.Ref && r.Digest == u.Digest })
		for i, r := range recs {
			if (own >= 0 && i == own) || (own < 0 && r.Digest == u.Digest) {
				out[i] = append(out[i], task)
			}
		}
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// ImageInfo is one row of List.
type ImageInfo struct {
	Record
	Bytes       int64    // unpacked size of all its layers
	UniqueBytes int64    // of the layers no other image uses
	Boxes       []string // boxes whose layer sits on it
}

// List returns the pulled images, their sizes and the boxes using them.
func (s *Store) List(home string) ([]ImageInfo, error) {
	recs, err := s.Records()
	if err != nil {
		return nil, err
	}
	users := map[string]int{}
	for _, r := range recs {
		for _, l := range r.Layers {
			users[l.DiffID]++
		}
	}
	boxes := boxesByRecord(recs, boxImages(home))
	out := make([]ImageInfo, 0, len(recs))
	for i, r := range recs {
		info := ImageInfo{Record: *r, Bytes: r.Bytes(), Boxes: boxes[i]}
		for _, l := range r.Layers {
			if users[l.DiffID] == 1 {
				info.UniqueBytes += l.Bytes
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// InUseError is returned by Remove for an image boxes still sit on.
type InUseError struct {
	Ref   string
	Boxes []string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("image %s is used by box(es) %s: remove them first (hermes box rm NAME) or pass --force to forget the image (its layers stay while those boxes use them)", e.Ref, strings.Join(e.Boxes, ", "))
}

// Remove forgets the image spec names and deletes the layers no other
// image and no box uses. An image boxes sit on is refused (*InUseError) unless force.
// Returns the bytes freed.
func (s *Store) Remove(home, spec string, force bool) (int64, error) {
	src, err := parseSource(spec, s.opts.Insecure)
	if err != nil {
		return 0, err
	}
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return 0, err
	}
	defer unlock()
	path := filepath.Join(s.refsDir(), recordKey(src.key)+".json")
	rec, err := s.readRecord(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("image %s is not pulled (see hermes box image ls): %w", src.key, fs.ErrNotExist)
	}
	if err != nil {
		return 0, err
	}
	if users := boxesByDigest(home)[rec.Digest]; len(users) > 0 && !force {
		return 0, &InUseError{Ref: rec.Ref, Boxes: users}
	}
	if err := os.Remove(path); err != nil {
		return 0, err
	}
	return s.removeUnused()
}

// Prune deletes layers no pulled image uses and what killed pulls left
// (layers/.tmp-*). Returns the bytes freed.
func (s *Store) Prune() (int64, error) {
	unlock, err := s.lock(unix.LOCK_EX)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return s.removeUnused()
}

// removeUnused deletes every layer no record names, and temporary
// entries; the caller holds the exclusive lock, so no pull is running.
func (s *Store) removeUnused() (int64, error) {
	recs, err := s.Records()
	if err != nil {
		return 0, err
	}
	used := map[string]bool{}
	for _, u := range boxImages(filepath.Dir(s.dir)) { // boxes keep their layers
		for _, l := range u.Layers {
			used[strings.TrimPrefix(l, "sha256:")] = true
		}
	}
	for _, r := range recs {
		for _, l := range r.Layers {
			used[strings.TrimPrefix(l.DiffID, "sha256:")] = true
		}
	}
	entries, err := os.ReadDir(s.layersDir())
	if err != nil {
		return 0, err
	}
	var freed int64
	var errs []error
	for _, e := range entries {
		name := e.Name()
		id := strings.TrimSuffix(name, ".json")
		if used[id] && !strings.HasPrefix(name, ".tmp-") {
			continue
		}
		p := filepath.Join(s.layersDir(), name)
		freed += diskUsage(p)
		errs = append(errs, os.RemoveAll(p))
	}
	return freed, errors.Join(errs...)
}

// diskUsage is the allocated bytes of the tree at p (no link followed).
func diskUsage(p string) int64 {
	var n int64
	filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}
