package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

const sessionColumns = `s.id, s.source, s.model, s.provider, coalesce(s.title, ''), s.system_prompt, s.cwd,
	s.started_at, s.updated_at, coalesce(s.ended_at, 0), coalesce(s.end_reason, ''),
	s.message_count, s.tool_call_count, s.input_tokens, s.output_tokens, s.cache_read_tokens,
	s.cache_write_tokens, s.reasoning_tokens, s.api_call_count, coalesce(s.parent_session_id, ''), s.metadata`

func scanSession(row pgx.Row, extra ...any) (store.Session, error) {
	var x store.Session
	var started, updated, ended, msgs, calls, apiCalls int64
	var meta string
	dest := []any{&x.ID, &x.Source, &x.Model, &x.Provider, &x.Title, &x.SystemPrompt, &x.Cwd,
		&started, &updated, &ended, &x.EndReason,
		&msgs, &calls, &x.Usage.InputTokens, &x.Usage.OutputTokens, &x.Usage.CacheReadTokens,
		&x.Usage.CacheWriteTokens, &x.Usage.ReasoningTokens, &apiCalls, &x.ParentSessionID, &meta}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return store.Session{}, err
	}
	x.MessageCount, x.ToolCallCount, x.APICallCount = int(msgs), int(calls), int(apiCalls)
	x.StartedAt, x.UpdatedAt = fromMillis(started), fromMillis(updated)
	if ended != 0 {
		x.EndedAt = fromMillis(ended)
	}
	x.Metadata = json.RawMessage(meta)
	return x, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateSession stores a new session with ns.Messages in one transaction.
func (db *DB) CreateSession(ctx context.Context, ns store.NewSession) (store.Session, error) {
	if ns.Source == "" {
		ns.Source = "cli"
	}
	meta, err := store.CheckMetadata(ns.Metadata)
	if err != nil {
		return store.Session{}, err
	}
	rows := make([]store.EncodedMessage, len(ns.Messages))
	for i, m := range ns.Messages {
		if rows[i], err = store.EncodeMessage(m); err != nil {
			return store.Session{}, err
		}
	}
	now := db.now()
	for attempt := 0; ; attempt++ {
		id := ns.ID
		if id == "" {
			if id, err = store.SessionIDAt(now, db.rand); err != nil {
				return store.Session{}, err
			}
		}
		err = db.inTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO sessions
				(id, source, model, provider, system_prompt, cwd, started_at, updated_at, parent_session_id, metadata)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9)`,
				id, ns.Source, ns.Model, ns.Provider, ns.SystemPrompt, ns.Cwd, millis(now), nullable(ns.ParentSessionID), meta); err != nil {
				return err
			}
			for _, r := range rows {
				if _, err := appendTx(ctx, tx, id, r, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && isUnique(err, "sessions_pkey") && ns.ID == "" && attempt < 5 {
			continue // two sessions in the same second drew the same 6 hex digits
		}
		if err != nil {
			if isForeignKey(err) {
				return store.Session{}, fmt.Errorf("parent session %q: %w", ns.ParentSessionID, store.ErrNotFound)
			}
			return store.Session{}, fmt.Errorf("create session: %w", err)
		}
		return db.Session(ctx, id)
	}
}

// Session returns the session with exactly this id.
func (db *DB) Session(ctx context.Context, id string) (store.Session, error) {
	x, err := scanSession(db.pool.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions AS s WHERE s.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session %q: %w", id, store.ErrNotFound)
	}
	return x, err
}

// Latest returns the most recently updated session of source with messages.
func (db *DB) Latest(ctx context.Context, source string) (store.Session, error) {
	list, err := db.List(ctx, store.ListOptions{Limit: 1, Source: source, NonEmpty: true})
	if err != nil {
		return store.Session{}, err
	}
	if len(list) == 0 {
		return store.Session{}, store.NoSessionYetError(source)
	}
	return list[0], nil
}

func (db *DB) sessions(ctx context.Context, sqlText string, args ...any) ([]store.Session, error) {
	rows, err := db.pool.Query(ctx, sqlText, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		x, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// Resolve finds the session a person means (see store.Store).
func (db *DB) Resolve(ctx context.Context, ref string) (store.Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return store.Session{}, fmt.Errorf("empty session reference: give an id, an id prefix, a title or \"latest\"")
	}
	if strings.EqualFold(ref, "latest") {
		return db.Latest(ctx, "")
	}
	if x, err := db.Session(ctx, ref); err == nil || !errors.Is(err, store.ErrNotFound) {
		return x, err
	}
	x, err := scanSession(db.pool.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions AS s WHERE lower(s.title) = lower($1)", ref))
	if err == nil || !errors.Is(err, pgx.ErrNoRows) {
		return x, err
	}
	if store.IsIDPrefix(ref) {
		found, err := db.sessions(ctx, "SELECT "+sessionColumns+
			" FROM sessions AS s WHERE s.id LIKE $1 || '%' ORDER BY s.id LIMIT 11", strings.ReplaceAll(ref, "_", `\_`))
		if err != nil {
			return store.Session{}, err
		}
		switch {
		case len(found) == 1:
			return found[0], nil
		case len(found) > 1:
			return store.Session{}, store.AmbiguousIDError(ref, found)
		}
	}
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(ref))
	found, err := db.sessions(ctx, "SELECT "+sessionColumns+
		` FROM sessions AS s WHERE lower(s.title) LIKE $1 || '%' ORDER BY s.started_at DESC LIMIT 11`, esc)
	if err != nil {
		return store.Session{}, err
	}
	switch len(found) {
	case 0:
		return store.Session{}, store.NoMatchError(ref)
	case 1:
		return found[0], nil
	}
	return store.Session{}, store.AmbiguousTitleError(ref, found)
}

// List returns sessions, most recently updated first, with previews.
func (db *DB) List(ctx context.Context, o store.ListOptions) ([]store.Session, error) {
	if o.Limit <= 0 {
		o.Limit = 50
	}
	q := "SELECT " + sessionColumns + `,
		coalesce((SELECT substr(m.content, 1, 120) FROM messages AS m
			WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.seq LIMIT 1), '')
		FROM sessions AS s WHERE ($1 = '' OR s.source = $1) AND (NOT $2 OR s.message_count > 0)
		ORDER BY s.updated_at DESC, s.id DESC LIMIT $3`
	rows, err := db.pool.Query(ctx, q, o.Source, o.NonEmpty, o.Limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		var preview string
		x, err := scanSession(rows, &preview)
		if err != nil {
			return nil, err
		}
		x.Preview = strings.Join(strings.Fields(preview), " ")
		out = append(out, x)
	}
	return out, rows.Err()
}

// SetTitle sets (or, with "", clears) a session's title; see store.SQLite.SetTitle.
func (db *DB) SetTitle(ctx context.Context, id, title string) error {
	title = store.CleanTitle(title)
	if err := db.checkTitle(ctx, db.pool, title); err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx, "UPDATE sessions SET title = $1 WHERE id = $2", nullable(title), id)
	if err != nil {
		if isUnique(err, "sessions_title_key") {
			var other string
			_ = db.pool.QueryRow(ctx, "SELECT id FROM sessions WHERE lower(title) = lower($1)", title).Scan(&other)
			return store.TitleTakenError(title, other)
		}
		return fmt.Errorf("set title: %w", err)
	}
	return mustAffect(tag.RowsAffected(), id)
}

// ReplaceTitle sets id's title to title only while it is still old
// (exactly); see store.SQLite.ReplaceTitle.
func (db *DB) ReplaceTitle(ctx context.Context, id, old, title string) (bool, error) {
	title = store.CleanTitle(title)
	if title == "" || len([]rune(title)) > store.MaxTitleLen {
		return false, fmt.Errorf("title must be 1 to %d characters", store.MaxTitleLen)
	}
	if err := db.checkTitle(ctx, db.pool, title); err != nil {
		return false, err
	}
	tag, err := db.pool.Exec(ctx, "UPDATE sessions SET title = $1 WHERE id = $2 AND title = $3", title, id, old)
	if err != nil {
		if isUnique(err, "sessions_title_key") {
			return false, fmt.Errorf("title %q is already used by another session; choose another title", title)
		}
		return false, fmt.Errorf("set title: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (db *DB) checkTitle(ctx context.Context, q queryRower, title string) error {
	if err := store.CheckTitle(title); err != nil || title == "" {
		return err
	}
	var other string
	err := q.QueryRow(ctx, "SELECT id FROM sessions WHERE lower(id) = lower($1)", title).Scan(&other)
	if err == nil {
		return store.TitleIsIDError(title, other)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("check title: %w", err)
	}
	return nil
}

func mustAffect(n int64, id string) error {
	if n == 0 {
		return fmt.Errorf("session %q: %w", id, store.ErrNotFound)
	}
	return nil
}

// SetSystemPrompt stores the system prompt a session was built with.
func (db *DB) SetSystemPrompt(ctx context.Context, id, prompt string) error {
	tag, err := db.pool.Exec(ctx, "UPDATE sessions SET system_prompt = $1 WHERE id = $2", prompt, id)
	if err != nil {
		return fmt.Errorf("set system prompt: %w", err)
	}
	return mustAffect(tag.RowsAffected(), id)
}

// SetMetadata merges patch (RFC 7396) into the session's metadata.
func (db *DB) SetMetadata(ctx context.Context, id string, patch json.RawMessage) error {
	if _, err := store.CheckMetadata(patch); err != nil {
		return err
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var doc string
		if err := tx.QueryRow(ctx, "SELECT metadata FROM sessions WHERE id = $1 FOR UPDATE", id).Scan(&doc); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return mustAffect(0, id)
			}
			return err
		}
		merged, err := store.MergePatch(doc, patch)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE sessions SET metadata = $1 WHERE id = $2", merged, id)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("set metadata: %w", err)
	}
	return err
}

const addUsage = `UPDATE sessions SET
	input_tokens = input_tokens + $1, output_tokens = output_tokens + $2,
	cache_read_tokens = cache_read_tokens + $3, cache_write_tokens = cache_write_tokens + $4,
	reasoning_tokens = reasoning_tokens + $5, api_call_count = api_call_count + $6, updated_at = $7
	WHERE id = $8`

func usageArgs(id string, u llm.Usage, apiCalls int, now time.Time) []any {
	return []any{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, apiCalls,
		millis(now), id}
}

// AddUsage adds token usage and apiCalls to the session's totals.
func (db *DB) AddUsage(ctx context.Context, id string, u llm.Usage, apiCalls int) error {
	tag, err := db.pool.Exec(ctx, addUsage, usageArgs(id, u, apiCalls, db.now())...)
	if err != nil {
		return fmt.Errorf("add usage: %w", err)
	}
	return mustAffect(tag.RowsAffected(), id)
}

// EndSession records that a session ended and why.
func (db *DB) EndSession(ctx context.Context, id, reason string) error {
	now := millis(db.now())
	tag, err := db.pool.Exec(ctx, "UPDATE sessions SET ended_at = $1, end_reason = $2, updated_at = $1 WHERE id = $3", now, reason, id)
	if err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return mustAffect(tag.RowsAffected(), id)
}

// Delete removes a session and its messages; children lose their parent.
func (db *DB) Delete(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return mustAffect(tag.RowsAffected(), id)
}

// PruneEmpty deletes sessions without messages updated more than
// olderThan ago whose turn lock nobody holds: the DELETE tries each
// candidate's advisory lock for its own transaction, which fails while a
// turn holds it.
func (db *DB) PruneEmpty(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := millis(db.now().Add(-olderThan))
	tag, err := db.pool.Exec(ctx, `DELETE FROM sessions WHERE message_count = 0 AND updated_at < $1
		AND pg_try_advisory_xact_lock($2 + (hashtext(id)::bigint & 4294967295))`, cutoff, db.lockNS)
	if err != nil {
		return 0, fmt.Errorf("prune empty sessions: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
