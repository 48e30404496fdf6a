package snapshot

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

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/lazyregexp"
)

// ErrNotFound is wrapped by Store methods when no snapshot
// has the requested id.
var ErrNotFound = errors.New("snapshot not found")

// ErrRestoreTargetNotEmpty is wrapped by Restore and RestoreInto when
// the target upper dir already holds files; those are left untouched.
var ErrRestoreTargetNotEmpty = errors.New("restore target is not empty")

// idPattern matches ids made by Store.Create:
// snap_<UTC yyyymmdd>_<hhmmss>_<6 hex digits>.
var idPattern = lazyregexp.New(`^snap_[0-9]{8}_[0-9]{6}_[0-9a-f]{6}$`)

// Manifest describes one stored snapshot; it is saved as
// <id>.json beside the archive <id>.tar.zst.
type Manifest struct {
	ID         string    `json:"id"`                    // snap_20261130_145500_a1b2c3
	Task       string    `json:"task"`                  // task (session) whose upper layer was saved
	Parent     string    `json:"parent,omitempty"`      // snapshot the task was restored or forked from
	BaseImage  string    `json:"base_image,omitempty"`  // terminal.box_image the upper sits on ("host", a path or a name)
	BaseDigest string    `json:"base_digest,omitempty"` // sha256 hex of the base image tarball, when known
	Created    time.Time `json:"created"`               // UTC
	Size       int64     `json:"size"`                  // bytes of the compressed archive
	SHA256     string    `json:"sha256"`                // hex sha256 of the compressed archive
}

// Origin is the lineage recorded in a new snapshot's manifest;
// every field may be empty.
type Origin struct {
	Parent     string // snapshot id the task's upper was restored or forked from
	BaseImage  string // terminal.box_image of the task
	BaseDigest string // sha256 of that image's tarball, when it came from one
}

// Store keeps snapshots of box upper layers in Dir, normally
// HERMES_HOME/boxes/snapshots (see NewStore). Snapshots are kept
// until removed (E2B semantics, sandbox.md §D4).
type Store struct {
	Dir  string           // directory holding <id>.tar.zst and <id>.json
	Now  func() time.Time // clock for ids and Created; nil means time.Now
	Rand io.Reader        // source of id suffixes; nil means crypto/rand
}

// NewStore returns the store under HERMES_HOME/boxes/snapshots.
func NewStore(home string) *Store {
	return &Store{Dir: filepath.Join(home, "boxes", "snapshots")}
}

// ArchivePath returns where the compressed archive of snapshot id lives.
func (s *Store) ArchivePath(id string) string {
	return filepath.Join(s.Dir, id+".tar.zst")
}

func (s *Store) manifestPath(id string) string {
	return filepath.Join(s.Dir, id+".json")
}

// Create snapshots upperDir (see Archive) for task taskID. The
// archive is written to a temporary file, fsynced and renamed; the
// manifest is written the same way last, so List and Get never see a
// half-written snapshot. The box must be stopped or frozen meanwhile.
func (s *Store) Create(taskID, upperDir string, origin Origin) (Manifest, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return Manifest{}, fmt.Errorf("snapshot store %s: %w", s.Dir, err)
	}
	id, err := s.newID()
	if err != nil {
		return Manifest{}, err
	}
	s.sweepStale()
	tmp, err := os.CreateTemp(s.Dir, "."+id+".tar.zst.*")
	if err != nil {
		return Manifest{}, fmt.Errorf("snapshot store %s: %w", s.Dir, err)
	}
	// Locked until the manifest is written: sweepStale removes only
	// archives nobody holds (left by a killed Create).
	if err := unix.Flock(int(tmp.Fd()), unix.LOCK_EX); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return Manifest{}, fmt.Errorf("snapshot %s: %w", tmp.Name(), err)
	}
	defer tmp.Close()
	committed := false
	defer func() {
		if !committed {
			os.Remove(tmp.Name())
		}
	}()
	sum := sha256.New()
	counter := &byteCounter{w: io.MultiWriter(tmp, sum)}
	if err := Archive(upperDir, counter); err != nil {
		return Manifest{}, fmt.Errorf("snapshot of task %s: %w", taskID, err)
	}
	if err := tmp.Sync(); err != nil {
		return Manifest{}, fmt.Errorf("snapshot %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), s.ArchivePath(id)); err != nil {
		return Manifest{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	committed = true
	m := Manifest{
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
		return Manifest{}, err
	}
	if err := atomicfile.Write(s.manifestPath(id), append(data, '\n'), 0o600); err != nil {
		os.Remove(s.ArchivePath(id))
		return Manifest{}, err
	}
	return m, nil
}

// sweepStale removes what a Create killed part way left behind: a
// temporary archive (.snap_*.tar.zst.*), or an archive renamed into place
// whose manifest was never written, when no Create holds its lock.
func (s *Store) sweepStale() {
	temps, _ := filepath.Glob(filepath.Join(s.Dir, ".snap_*.tar.zst.*"))
	archives, _ := filepath.Glob(filepath.Join(s.Dir, "snap_*.tar.zst"))
	orphan := func(path string) bool { // an archive without a manifest
		if !strings.HasSuffix(path, ".tar.zst") {
			return true
		}
		_, err := os.Stat(s.manifestPath(strings.TrimSuffix(filepath.Base(path), ".tar.zst")))
		return errors.Is(err, fs.ErrNotExist)
	}
	for _, path := range append(temps, archives...) {
		if !orphan(path) {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		// Asked again once locked: a Create writes the manifest before
		// it lets go of the lock.
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil && orphan(path) {
			os.Remove(path)
		}
		f.Close()
	}
}

// Get returns the manifest of snapshot id; unknown ids wrap
// ErrNotFound.
func (s *Store) Get(id string) (Manifest, error) {
	if !idPattern().MatchString(id) {
		return Manifest{}, fmt.Errorf("%w: %q is not a snapshot id (expected snap_YYYYMMDD_HHMMSS_xxxxxx; `hermes box snapshots` lists them)", ErrNotFound, id)
	}
	data, err := os.ReadFile(s.manifestPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, fmt.Errorf("%w: %s (no %s)", ErrNotFound, id, s.manifestPath(id))
	}
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("snapshot manifest %s is damaged: %w; delete it and %s to drop the snapshot", s.manifestPath(id), err, s.ArchivePath(id))
	}
	return m, nil
}

// List returns every stored snapshot, oldest first (ties by id), after
// removing what killed Creates left (sweepStale). A missing store
// directory is an empty list.
func (s *Store) List() ([]Manifest, error) {
	s.sweepStale()
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !idPattern().MatchString(id) {
			continue
		}
		m, err := s.Get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Manifest) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Remove deletes snapshot id: the manifest first, so a crash never leaves
// a listed snapshot without its archive. A damaged manifest is removed
// too; an id with neither file wraps ErrNotFound.
func (s *Store) Remove(id string) error {
	if !idPattern().MatchString(id) {
		return fmt.Errorf("%w: %q is not a snapshot id", ErrNotFound, id)
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
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return nil
}

// RestoreInto extracts snapshot id into upperDir, which must be empty or
// not exist (see Restore). Restoring into a task's own upper is a
// restore; into a new task's upper it is a fork, and the two then diverge
// independently. The archive's sha256 is checked against the manifest;
// on any failure upperDir is emptied again.
func (s *Store) RestoreInto(id, upperDir string) (Manifest, error) {
	m, err := s.Get(id)
	if err != nil {
		return Manifest{}, err
	}
	f, err := os.Open(s.ArchivePath(id))
	if err != nil {
		return Manifest{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	defer f.Close()
	sum := sha256.New()
	err = restore(io.TeeReader(f, sum), upperDir, false) // the sha256 covers the archive
	if err == nil {
		err = checkDigest(f, sum, m.SHA256)
	}
	if err != nil {
		if !errors.Is(err, ErrRestoreTargetNotEmpty) {
			emptyDir(upperDir)
		}
		return Manifest{}, fmt.Errorf("restore snapshot %s: %w", id, err)
	}
	return m, nil
}

// checkDigest drains the rest of r into sum (zstd may stop before the end
// of the file) and compares it with want.
func checkDigest(r io.Reader, sum hash.Hash, want string) error {
	if _, err := io.Copy(sum, r); err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != want {
		return fmt.Errorf("archive is corrupt: sha256 %s, manifest says %s", got, want)
	}
	return nil
}

// emptyDir removes everything inside dir, keeping dir.
func emptyDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// newID returns an unused id snap_<UTC date>_<time>_<6 hex>.
func (s *Store) newID() (string, error) {
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

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// byteCounter counts bytes written through it.
type byteCounter struct {
	w io.Writer
	n int64
}

func (c *byteCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
