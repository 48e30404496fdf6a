// Package store keeps hermes sessions in SQLite: HERMES_HOME/state.db with
// sessions, their messages (tool calls, tool results, reasoning), token
// usage, and two full-text indexes for session search.
//
// The layout follows Hermes Agent's session storage ("session-storage.md":
// sessions + messages + messages_fts + messages_fts_trigram, WAL, ids like
// 20261130_145500_a1b2c3, unique titles); the schema itself is ours and is
// described in schema.go.
//
// Every write is its own transaction, committed to the WAL before the call
// returns, so a process killed at any point (kill -9) loses nothing a call
// already acknowledged (TestCrashLosesNothingAcknowledged). The database
// runs in WAL mode so that several hermes processes can read while one
// writes; writers wait up to the busy timeout for each other.
//
// Durability: synchronous=NORMAL, not FULL. In WAL mode NORMAL syncs the
// WAL at checkpoints instead of at every commit: a committed transaction is
// in the OS page cache when the call returns and survives any crash of
// hermes; only a power loss or kernel crash may drop the last transactions
// (the database stays consistent, and a resumed session reports tool calls
// without a stored result as having an unknown outcome). FULL costs one
// fsync per message: measured 326 vs 23 fsyncs for 300 appends, and
// 140→130 ms median for a `hermes -z` run with one tool call on a loaded
// machine; under disk load one fsync took up to ~22 ms.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// FileName is the name of the session database inside HERMES_HOME.
const FileName = "state.db"

// BusyTimeout is how long a write waits for another process's write
// transaction before failing with "database is locked".
const BusyTimeout = 10 * time.Second

// ErrNotFound is returned (wrapped) when a session does not exist.
var ErrNotFound = errors.New("session not found")

// notFoundError is an ErrNotFound whose message already says what was not
// found, so a person does not read "...: session not found" after it.
type notFoundError string

func notFound(msg string) error { return notFoundError(msg) }

func (e notFoundError) Error() string { return string(e) }

// Is makes errors.Is(err, ErrNotFound) hold.
func (e notFoundError) Is(target error) bool { return target == ErrNotFound }

// SQLite is an open state.db. It is safe for concurrent use.
type SQLite struct {
	db   *sql.DB
	path string
	now  func() time.Time
	rand io.Reader
	// stmts holds prepared statements reused across calls.
	stmts stmtCache
	// writeSlot (capacity 1) serialises this process's writes; pending
	// holds appends waiting for a group commit (write.go).
	writeSlot chan struct{}
	pendingMu sync.Mutex
	pending   []*writeOp
	// commits counts committed write transactions (checkpoint.go);
	// stopCheckpoints ends the background checkpoints.
	commits         atomic.Int64
	stopCheckpoints func()
	// rankFloor, scanLimit and searchTimeout override commonFloor,
	// scanWindow and SearchTimeout when not zero (tests use small stores).
	rankFloor, scanLimit int64
	searchTimeout        time.Duration
	// exitAfterClose is WithExitAfterClose.
	exitAfterClose bool
}

// Settings are what Options set; every implementation of Store reads them
// (NewSettings fills the defaults).
type Settings struct {
	Now            func() time.Time // time.Now by default
	Rand           io.Reader        // crypto/rand by default
	ExitAfterClose bool
}

// Option configures Open (and the other implementations' openers).
type Option func(*Settings)

// NewSettings applies opts over the defaults.
func NewSettings(opts ...Option) Settings {
	set := Settings{Now: time.Now, Rand: rand.Reader}
	for _, o := range opts {
		o(&set)
	}
	return set
}

// WithClock sets the clock used for timestamps and session ids (time.Now by
// default).
func WithClock(now func() time.Time) Option { return func(s *Settings) { s.Now = now } }

// WithRandom sets the source of the 6 hex digits of session ids
// (crypto/rand by default).
func WithRandom(r io.Reader) Option { return func(s *Settings) { s.Rand = r } }

// WithExitAfterClose is for a process that exits right after Close (a
// CLI run): Close then leaves a WAL smaller than walKeepBytes for the next
// process instead of checkpointing it into the database, and leaves the
// SQLite connection to the process's exit. A checkpoint at close costs
// two fsyncs, and deleting the WAL costs the next run's first write two
// more (the new WAL's header and its directory): together most of the
// store's share of a one-shot turn's wall time. Nothing committed is at
// risk: the WAL holds it, as after a crash (TestCrashLosesNothingAcknowledged),
// and the next Open reads it back; past walKeepBytes Close checkpoints
// as usual, which bounds the next Open's WAL recovery.
func WithExitAfterClose() Option { return func(s *Settings) { s.ExitAfterClose = true } }

func newSQLite(path string, opts []Option) *SQLite {
	set := NewSettings(opts...)
	return &SQLite{path: path, now: set.Now, rand: set.Rand, exitAfterClose: set.ExitAfterClose,
		writeSlot: make(chan struct{}, 1)}
}

// walKeepBytes bounds the WAL that a WithExitAfterClose store leaves at
// Close: about 8 one-tool turns (each writes ~60 pages of 4 KiB to it).
// The next Open reads it back in ~2 ms at this size (BenchmarkOpenWithWAL),
// ~1 ms on average; a smaller bound would checkpoint, and pay its fsyncs,
// more often.
const walKeepBytes = 2 << 20

// Open opens (creating if needed) the session database at path, which is
// usually filepath.Join(HERMES_HOME, FileName), and brings its schema up to
// date. The file and its parent directory are created private to the user
// (0600 / 0700). Errors name the file; a schema newer than this build is an
// error rather than a silent downgrade.
func Open(path string, opts ...Option) (*SQLite, error) {
	s := newSQLite(path, opts)
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("session store %s: the path must not contain '?'; set HERMES_HOME to another directory", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	// Create the file ourselves so its mode is 0600 (SQLite gives the -wal
	// and -shm files the same mode as the database file).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	f.Close()

	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "temp_store(MEMORY)")
	// A 32 MiB page cache per connection (the default is 2 MiB): a search
	// reads the match lists and, for bm25, a size row per ranked message;
	// with the small cache these pages were read again from the OS on
	// every search (a third of a search's time in pread).
	q.Add("_pragma", "cache_size(-32768)")
	// Checkpoints run beside the writes (checkpoint.go), not inside the
	// commit that crosses 1,000 WAL pages, where their fsyncs held every
	// other writer.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	q.Set("_txlock", "immediate")
	// A plain file name (not a file: URI) keeps %, # and spaces literal; the
	// driver cuts the name at the first '?', refused above.
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("session store %s: %w", path, err)
	}
	// Keep connections open between bursts: reopening one runs every
	// pragma above again (the default keeps 2 idle).
	db.SetMaxIdleConns(16)
	s.db = db
	s.stopCheckpoints = s.startCheckpoints(checkpointEvery)
	if err := s.migrateRetrying(context.Background()); err != nil {
		s.stopCheckpoints()
		db.Close()
		return nil, fmt.Errorf("session store %s: %w", path, err)
	}
	return s, nil
}

// Path is the database file this store was opened from.
func (s *SQLite) Path() string { return s.path }

// Close checkpoints and closes the database (see WithExitAfterClose for
// the exception).
func (s *SQLite) Close() error {
	if s.stopCheckpoints != nil { // nil for OpenReadOnly: no checkpoints ran
		s.stopCheckpoints()
	}
	if s.exitAfterClose {
		if fi, err := os.Stat(s.path + "-wal"); err == nil && fi.Size() < walKeepBytes {
			return nil
		}
	}
	s.stmts.close()
	_, _ = s.db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	return s.db.Close()
}

// SchemaVersion is the schema version this build writes (PRAGMA user_version).
func SchemaVersion() int { return len(migrations) }

// migrateRetrying runs migrate, retrying while another process holds the
// database (SQLITE_BUSY: switching a fresh file to WAL does not wait on the
// busy timeout), for up to about 10 s.
func (s *SQLite) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(BusyTimeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		err := s.migrate(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(delay)
	}
}

// isBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY).
func isBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked"))
}

func (s *SQLite) migrate(ctx context.Context) error {
	var version int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		if strings.Contains(err.Error(), "not a database") {
			return fmt.Errorf("the file is not a SQLite database; move it away and hermes will create a new one")
		}
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this hermes understands (%d); upgrade hermes", version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			// Another process may have migrated while we waited for the
			// write lock (several hermes runs starting on a fresh HERMES_HOME).
			var current int
			if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
				return err
			}
			if current > v {
				return nil
			}
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migration to schema version %d: %w", v+1, err)
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// CheckIntegrity runs SQLite's integrity_check and the FTS5 integrity
// checks of both search indexes against the stored messages. It returns nil
// when everything is consistent.
func (s *SQLite) CheckIntegrity(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return err
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	rows.Close()
	if len(problems) > 0 {
		return fmt.Errorf("integrity_check: %s", strings.Join(problems, "; "))
	}
	for _, table := range []string{"messages_fts", "messages_trigram"} {
		q := fmt.Sprintf("INSERT INTO %s(%s, rank) VALUES('integrity-check', 1)", table, table)
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	return nil
}

// newSessionID returns an id like 20261130_145500_a1b2c3: the UTC start
// time and 6 random hex digits (Hermes CLI session ids).
func (s *SQLite) newSessionID(t time.Time) (string, error) { return SessionIDAt(t, s.rand) }

// SessionIDAt returns a session id for a session started at t, its 6 hex
// digits read from r.
func SessionIDAt(t time.Time, r io.Reader) (string, error) {
	var b [3]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	return t.UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b[:]), nil
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// OpenReadOnly opens an existing session database for reading only, for
// commands that only read (sessions list/show/export/search) when
// HERMES_HOME is read-only. It tries SQLite's read-only mode, then
// immutable mode (no locks, no -shm: what a read-only file system allows;
// transactions still only in the WAL are then not seen). A missing file is
// an error wrapping fs.ErrNotExist; nothing is created or migrated.
func OpenReadOnly(path string, opts ...Option) (*SQLite, error) {
	s := newSQLite(path, opts)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	base := (&url.URL{Scheme: "file", Path: path}).String()
	var lastErr error
	for _, mode := range []string{"mode=ro", "mode=ro&immutable=1"} {
		db, err := sql.Open("sqlite", base+"?"+mode+"&_pragma=busy_timeout(10000)&_pragma=query_only(1)")
		if err != nil {
			return nil, fmt.Errorf("session store %s: %w", path, err)
		}
		var version int
		if err = db.QueryRow("PRAGMA user_version").Scan(&version); err == nil {
			if _, err = db.Exec("SELECT count(*) FROM sessions"); err == nil {
				if version > len(migrations) {
					db.Close()
					return nil, fmt.Errorf("session store %s: schema version %d is newer than this hermes understands (%d); upgrade hermes", path, version, len(migrations))
				}
				s.db = db
				return s, nil
			}
		}
		db.Close()
		lastErr = err
	}
	return nil, fmt.Errorf("session store %s (read-only): %w", path, lastErr)
}
