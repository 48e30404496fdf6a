package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// Store is where hermes keeps its sessions: their rows, messages (tool
// calls, tool results, reasoning), token usage, titles, the search
// indexes and the per-session turn locks. Two implementations pass the
// same conformance suite (internal/store/conformance): *SQLite, the
// default (HERMES_HOME/state.db, this package), and PostgreSQL
// (internal/store/postgres, `database.backend: postgres`), which several
// hermes processes on several machines share.
//
// Every write is committed when its call returns; writes that arrive
// together may be group-committed (each still its own all-or-nothing
// unit). A missing session is an error wrapping ErrNotFound, a busy turn
// lock a *BusyError, a malformed search a *QueryError, a search stopped
// after SearchTimeout a *SlowQueryError. All methods are safe for
// concurrent use.
type Store interface {
	// Describe names where the store lives for a person: the state.db path,
	// or the PostgreSQL host, database and schema (never a password).
	Describe() string
	Close() error

	// NewSessionID returns a fresh session id (20261130_145500_a1b2c3).
	NewSessionID() (string, error)
	CreateSession(ctx context.Context, ns NewSession) (Session, error)
	Session(ctx context.Context, id string) (Session, error)
	// Latest is the most recently updated session of source ("" = any)
	// that has messages.
	Latest(ctx context.Context, source string) (Session, error)
	// Resolve finds the session a person means: "latest", an exact id, a
	// title (any case), a unique id prefix or a unique title prefix.
	Resolve(ctx context.Context, ref string) (Session, error)
	List(ctx context.Context, o ListOptions) ([]Session, error)
	SetTitle(ctx context.Context, id, title string) error
	// ReplaceTitle sets the title only while it is still old and reports
	// whether it did (a title computed from an older read loses).
	ReplaceTitle(ctx context.Context, id, old, title string) (bool, error)
	SetSystemPrompt(ctx context.Context, id, prompt string) error
	// SetMetadata merges an RFC 7396 merge patch into the metadata.
	SetMetadata(ctx context.Context, id string, patch json.RawMessage) error
	AddUsage(ctx context.Context, id string, u llm.Usage, apiCalls int) error
	EndSession(ctx context.Context, id, reason string) error
	Delete(ctx context.Context, id string) error
	// PruneEmpty deletes unlocked sessions without messages last updated
	// more than olderThan ago and returns how many.
	PruneEmpty(ctx context.Context, olderThan time.Duration) (int, error)

	// AppendMessage stores m at the end of the session and returns its seq.
	AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error)
	// AppendMessageUsage is AppendMessage and AddUsage in one commit.
	AppendMessageUsage(ctx context.Context, sessionID string, m llm.Message, u llm.Usage, apiCalls int) (int64, error)
	// Messages is the active conversation, in order.
	Messages(ctx context.Context, sessionID string) ([]llm.Message, error)
	StoredMessages(ctx context.Context, sessionID string, withArchived bool) ([]StoredMessage, error)
	ArchiveMessages(ctx context.Context, sessionID string, fromSeq, toSeq int64, summary llm.Message) (int64, error)
	ReplaceActive(ctx context.Context, sessionID string, msgs []llm.Message) error
	// Import writes whole sessions in one transaction and returns their ids.
	Import(ctx context.Context, sessions []ImportedSession) ([]string, error)

	Search(ctx context.Context, o SearchOptions) ([]Hit, error)

	// LockSession takes a session's turn lock for owner; a live holder
	// makes it return a *BusyError at once, a dead one is taken over.
	LockSession(ctx context.Context, sessionID, owner string) (unlock func(), err error)
}

// Describe is the state.db path.
func (s *SQLite) Describe() string { return s.path }

var _ Store = (*SQLite)(nil)
