package pairing

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hermes-go/hermes/internal/atomicfile"
)

// Reader reads documents: the bytes of name, nil when there is none.
type Reader interface {
	Get(name string) ([]byte, error)
}

// Tx reads and writes documents inside Docs.Update.
type Tx interface {
	Reader
	Put(name string, body []byte) error
}

// Docs keeps the pairing state's JSON documents. Two implementations pass
// one conformance suite (pairing/conformance): Files and the PostgreSQL
// table of internal/store/postgres.
type Docs interface {
	Reader
	// Update runs fn holding the exclusive lock of every Docs on the same
	// state (in any process); what fn Put is kept when fn returns nil.
	Update(fn func(tx Tx) error) error
	// Names lists the stored documents.
	Names() ([]string, error)
	// Where names document name for messages (a path, a table row).
	Where(name string) string
}

// Files is Docs in HERMES_HOME/pairing/: one file per document (0600,
// written atomically), changed under an exclusive flock(2) on
// pairing/.lock.
type Files struct{ dir string }

var _ Docs = Files{}

// NewFiles returns the documents of HERMES_HOME home.
func NewFiles(home string) Files { return Files{dir: filepath.Join(home, "pairing")} }

// Get implements Reader.
func (f Files) Get(name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Put implements Tx.
func (f Files) Put(name string, body []byte) error {
	return atomicfile.Write(filepath.Join(f.dir, name), body, 0o600)
}

// Where implements Docs.
func (f Files) Where(name string) string { return filepath.Join(f.dir, name) }

// Names implements Docs.
func (f Files) Names() ([]string, error) {
	entries, err := os.ReadDir(f.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasSuffix(n, ".json") {
			out = append(out, n)
		}
	}
	return out, nil
}

// Update implements Docs.
func (f Files) Update(fn func(tx Tx) error) error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(f.dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = unix.Flock(int(lock.Fd()), unix.LOCK_UN) }()
	return fn(f)
}
