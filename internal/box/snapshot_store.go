package box

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/lazyregexp"
)

// ErrSnapshotNotFound is wrapped by SnapshotStore methods when no snapshot
// has the requested id.
var ErrSnapshotNotFound = errors.New("snapshot not found")

// ErrRestoreTargetNotEmpty is wrapped by RestoreUpper and RestoreInto when
// the target upper dir already holds files; those are left untouched.
var ErrRestoreTargetNotEmpty = errors.New("restore target is not empty")

// snapshotIDPattern matches ids made by SnapshotStore.Create:
// snap_<UTC yyyymmdd>_<hhmmss>_<6 hex digits>.
var snapshotIDPattern = lazyregexp.New(`^snap_[0-9]{8}_[0-9]{6}_[0-9a-f]{6}$`)

// SnapshotManifest describes one stored snapshot; it is saved as
// <id>.json beside the archive <id>.tar.zst.
type SnapshotManifest struct {
	ID         string    `json:"id"`                    // snap_20261130_145500_a1b2c3
	Task       string    `json:"task"`                  // task (session) whose upper layer was saved
	Parent     string    `json:"parent,omitempty"`      // snapshot the task was restored or forked from
	BaseImage  string    `json:"base_image,omitempty"`  // terminal.box_image the upper sits on ("host", a path or a name)
	BaseDigest string    `json:"base_digest,omitempty"` // sha256 hex of the base image tarball, when known
	Created    time.Time `json:"created"`               // UTC
	Size       int64     `json:"size"`                  // bytes of the compressed archive
	SHA256     string    `json:"sha256"`                // hex sha256 of the compressed archive
}

// SnapshotOrigin is the lineage recorded in a new snapshot's manifest;
// every field may be empty.
type SnapshotOrigin struct {
	Parent     string // snapshot id the task's upper was restored or forked from
	BaseImage  string // terminal.box_image of the task
	BaseDigest string // sha256 of that image's tarball, when it came from one
}

// SnapshotStore keeps snapshots of box upper layers in Dir, normally
// HERMES_HOME/boxes/snapshots (see NewSnapshotStore). Snapshots are kept
// until removed (E2B semantics, sandbox.md §D4).
type SnapshotStore struct {
	Dir  string           // directory holding <id>.tar.zst and <id>.json
	Now  func() time.Time // clock for ids and Created; nil means time.Now
	Rand io.Reader        // source of id suffixes; nil means crypto/rand
}

// NewSnapshotStore returns the store under HERMES_HOME/boxes/snapshots.
func NewSnapshotStore(home string) *SnapshotStore {
	return &SnapshotStore{Dir: filepath.Join(home, "boxes", "snapshots")}
}

// ArchivePath returns where the compressed archive of snapshot id lives.
func (s *SnapshotStore) ArchivePath(id string) string {
	return filepath.Join(s.Dir, id+".tar.zst")
}

func (s *SnapshotStore) manifestPath(id string) string {
	return filepath.Join(s.Dir, id+".json")
}

// Create snapshots upperDir (see SnapshotUpper) for task taskID. The
// archive is written to a temporary file, fsynced and renamed; the
// manifest is written the same way last, so List and Get never see a
// half-written snapshot. The box must be stopped or frozen meanwhile.
func (s *SnapshotStore) Create(taskID, upperDir string, origin SnapshotOrigin) (SnapshotManifest, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return SnapshotManifest{}, fmt.Errorf("snapshot store %s: %w", s.Dir, err)
	}
	id, err := s.newID()
	if err != nil {
		return SnapshotManifest{}, err
	}
	tmp, err := os.CreateTemp(s.Dir, "."+id+".tar.zst.*")
	if err != nil {
		return SnapshotManifest{}, fmt.Errorf("snapshot store %s: %w", s.Dir, err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum := sha256.New()
	counter := &snapshotByteCounter{w: io.MultiWriter(tmp, sum)}
	if err := SnapshotUpper(upperDir, counter); err != nil {
		return SnapshotManifest{}, fmt.Errorf("snapshot of task %s: %w", taskID, err)
	}
	if err := tmp.Sync(); err != nil {
		return SnapshotManifest{}, fmt.Errorf("snapshot %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return SnapshotManifest{}, fmt.Errorf("snapshot %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), s.ArchivePath(id)); err != nil {
		return SnapshotManifest{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	committed = true
	m := SnapshotManifest{
		ID:         id,
		Task:       taskID,
		Parent:     origin.Parent,
		BaseImage:  origin.BaseImage,
		BaseDigest: origin.BaseDigest,
		Created:    s.now().UTC().Truncate(time.Second),
		Size:       counter.n,
		SHA256:     hex.EncodeToString(sum.Sum(nil)),
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return SnapshotManifest{}, err
	}
	if err := atomicfile.Write(s.manifestPath(id), append(data, '\n'), 0o600); err != nil {
		os.Remove(s.ArchivePath(id))
		return SnapshotManifest{}, err
	}
	return m, nil
}

// Get returns the manifest of snapshot id; unknown ids wrap
// ErrSnapshotNotFound.
func (s *SnapshotStore) Get(id string) (SnapshotManifest, error) {
	if !snapshotIDPattern().MatchString(id) {
		return SnapshotManifest{}, fmt.Errorf("%w: %q is not a snapshot id (expected snap_YYYYMMDD_HHMMSS_xxxxxx; `hermes box snapshots` lists them)", ErrSnapshotNotFound, id)
	}
	data, err := os.ReadFile(s.manifestPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return SnapshotManifest{}, fmt.Errorf("%w: %s (no %s)", ErrSnapshotNotFound, id, s.manifestPath(id))
	}
	if err != nil {
		return SnapshotManifest{}, err
	}
	var m SnapshotManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return SnapshotManifest{}, fmt.Errorf("snapshot manifest %s is damaged: %w; delete it and %s to drop the snapshot", s.manifestPath(id), err, s.ArchivePath(id))
	}
	return m, nil
}

// List returns every stored snapshot, oldest first (ties by id). A
// missing store directory is an empty list.
func (s *SnapshotStore) List() ([]SnapshotManifest, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []SnapshotManifest
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !snapshotIDPattern().MatchString(id) {
			continue
		}
		m, err := s.Get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b SnapshotManifest) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Remove deletes snapshot id: the manifest first, so a crash never leaves
// a listed snapshot without its archive. A damaged manifest is removed
// too; an id with neither file wraps ErrSnapshotNotFound.
func (s *SnapshotStore) Remove(id string) error {
	if !snapshotIDPattern().MatchString(id) {
		return fmt.Errorf("%w: %q is not a snapshot id", ErrSnapshotNotFound, id)
	}
	found := false
	for _, path := range []string{s.manifestPath(id), s.ArchivePath(id)} {
		err := os.Remove(path)
		if err == nil {
			found = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if !found {
		return fmt.Errorf("%w: %s", ErrSnapshotNotFound, id)
	}
	return nil
}

// RestoreInto extracts snapshot id into upperDir, which must be empty or
// not exist (see RestoreUpper). Restoring into a task's own upper is a
// restore; into a new task's upper it is a fork, and the two then diverge
// independently. The archive's sha256 is checked against the manifest;
// on any failure upperDir is emptied again.
func (s *SnapshotStore) RestoreInto(id, upperDir string) (SnapshotManifest, error) {
	m, err := s.Get(id)
	if err != nil {
		return SnapshotManifest{}, err
	}
	f, err := os.Open(s.ArchivePath(id))
	if err != nil {
		return SnapshotManifest{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	defer f.Close()
	sum := sha256.New()
	err = restoreUpper(io.TeeReader(f, sum), upperDir, false) // the sha256 covers the archive
	if err == nil {
		err = snapshotCheckDigest(f, sum, m.SHA256)
	}
	if err != nil {
		if !errors.Is(err, ErrRestoreTargetNotEmpty) {
			snapshotEmptyDir(upperDir)
		}
		return SnapshotManifest{}, fmt.Errorf("restore snapshot %s: %w", id, err)
	}
	return m, nil
}

// snapshotCheckDigest drains the rest of r into sum (zstd may stop before the end
// of the file) and compares it with want.
func snapshotCheckDigest(r io.Reader, sum hash.Hash, want string) error {
	if _, err := io.Copy(sum, r); err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != want {
		return fmt.Errorf("archive is corrupt: sha256 %s, manifest says %s", got, want)
	}
	return nil
}

// snapshotEmptyDir removes everything inside dir, keeping dir.
func snapshotEmptyDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// newID returns an unused id snap_<UTC date>_<time>_<6 hex>.
func (s *SnapshotStore) newID() (string, error) {
	rnd := s.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	stamp := s.now().UTC().Format("20060102_150405")
	for range 16 {
		var b [3]byte
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return "", fmt.Errorf("snapshot id: %w", err)
		}
		id := "snap_" + stamp + "_" + hex.EncodeToString(b[:])
		if _, err := os.Lstat(s.manifestPath(id)); errors.Is(err, fs.ErrNotExist) {
			return id, nil
		}
	}
	return "", fmt.Errorf("snapshot id: no free id for %s after 16 tries", stamp)
}

func (s *SnapshotStore) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// snapshotByteCounter counts bytes written through it.
type snapshotByteCounter struct {
	w io.Writer
	n int64
}

func (c *snapshotByteCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
