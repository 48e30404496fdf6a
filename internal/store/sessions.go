package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/hermes-go/hermes/internal/llm"
)

// MaxTitleLen is the longest session title, in characters (Hermes: ≤100).
const MaxTitleLen = 100

// NewSession describes a session to create.
type NewSession struct {
	// ID is the id to create the session under (from NewSessionID); "" draws
	// a fresh one.
	ID              string
	Source          string // cli, oneshot, tui, acp, cron, subagent...; "" means cli
	Model           string
	Provider        string
	Cwd             string
	SystemPrompt    string
	ParentSessionID string          // the session this one continues or was spawned from, if any
	Metadata        json.RawMessage // a JSON object (box, task...); nil means {}
	// Messages are stored in the same transaction as the session row, so
	// that the session never exists without them (see Recorder).
	Messages []llm.Message
}

// Session is one stored session. Times are UTC; EndedAt is zero while the
// session is open.
type Session struct {
	ID              string
	Source          string
	Model           string
	Provider        string
	Title           string // "" when untitled
	SystemPrompt    string
	Cwd             string
	StartedAt       time.Time
	UpdatedAt       time.Time
	EndedAt         time.Time
	EndReason       string
	MessageCount    int // messages stored, archived ones included
	ToolCallCount   int
	Usage           llm.Usage
	APICallCount    int
	ParentSessionID string
	Metadata        json.RawMessage
	// Preview is the start of the first user message (filled by List).
	Preview string
}

const sessionColumns = `s.id, s.source, s.model, s.provider, coalesce(s.title, ''), s.system_prompt, s.cwd,
	s.started_at, s.updated_at, coalesce(s.ended_at, 0), coalesce(s.end_reason, ''),
	s.message_count, s.tool_call_count, s.input_tokens, s.output_tokens, s.cache_read_tokens,
	s.cache_write_tokens, s.reasoning_tokens, s.api_call_count, coalesce(s.parent_session_id, ''), s.metadata`

func scanSession(row interface{ Scan(...any) error }, extra ...any) (Session, error) {
	var x Session
	var started, updated, ended int64
	var meta string
	dest := []any{&x.ID, &x.Source, &x.Model, &x.Provider, &x.Title, &x.SystemPrompt, &x.Cwd,
		&started, &updated, &ended, &x.EndReason,
		&x.MessageCount, &x.ToolCallCount, &x.Usage.InputTokens, &x.Usage.OutputTokens, &x.Usage.CacheReadTokens,
		&x.Usage.CacheWriteTokens, &x.Usage.ReasoningTokens, &x.APICallCount, &x.ParentSessionID, &meta}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return Session{}, err
	}
	x.StartedAt, x.UpdatedAt = fromMillis(started), fromMillis(updated)
	if ended != 0 {
		x.EndedAt = fromMillis(ended)
	}
	x.Metadata = json.RawMessage(meta)
	return x, nil
}

// NewSessionID returns a fresh session id (20261130_145500_a1b2c3) for
// NewSession.ID, so a session's id can be known (for its system prompt)
// before its row is written.
func (s *SQLite) NewSessionID() (string, error) { return s.newSessionID(s.now()) }

const insertSession = `INSERT INTO sessions
	(id, source, model, provider, system_prompt, cwd, started_at, updated_at, parent_session_id, metadata)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// CreateSession stores a new session, with ns.Messages if any, and returns
// it. With ns.ID set, that id is used (an existing id is an error).
func (s *SQLite) CreateSession(ctx context.Context, ns NewSession) (Session, error) {
	if ns.Source == "" {
		ns.Source = "cli"
	}
	meta := "{}"
	if len(ns.Metadata) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(ns.Metadata, &obj); err != nil {
			return Session{}, fmt.Errorf("session metadata must be a JSON object: %w", err)
		}
		meta = string(ns.Metadata)
	}
	rows := make([]messageRow, len(ns.Messages))
	for i, m := range ns.Messages {
		r, err := encodeMessage(m)
		if err != nil {
			return Session{}, err
		}
		rows[i] = r
	}
	now := s.now()
	var parent any
	if ns.ParentSessionID != "" {
		parent = ns.ParentSessionID
	}
	for attempt := 0; ; attempt++ {
		id := ns.ID
		if id == "" {
			var err error
			if id, err = s.newSessionID(now); err != nil {
				return Session{}, err
			}
		}
		sqls := []string{insertSession}
		if len(rows) > 0 {
			sqls = append(sqls, appendSQL...)
		}
		err := s.group(ctx, sqls, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := s.txExec(ctx, tx, insertSession,
				id, ns.Source, ns.Model, ns.Provider, ns.SystemPrompt, ns.Cwd, millis(now), millis(now), parent, meta); err != nil {
				return err
			}
			for i, r := range rows {
				if _, err := s.appendTx(ctx, tx, id, r, len(ns.Messages[i].ToolCalls), now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && isConstraint(err, "sessions.id") && ns.ID == "" && attempt < 5 {
			continue // two sessions in the same second drew the same 6 hex digits
		}
		if err != nil {
			if isConstraint(err, "FOREIGN KEY") {
				return Session{}, fmt.Errorf("parent session %q: %w", ns.ParentSessionID, ErrNotFound)
			}
			return Session{}, fmt.Errorf("create session: %w", err)
		}
		return s.Session(ctx, id)
	}
}

// Session returns the session with exactly this id, or an error wrapping
// ErrNotFound.
func (s *SQLite) Session(ctx context.Context, id string) (Session, error) {
	row := s.stmts.queryRow(ctx, s.db, "SELECT "+sessionColumns+" FROM sessions AS s WHERE s.id = ?", id)
	x, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	return x, err
}

// Latest returns the most recently updated session of source ("" = any
// source) that has messages, or an error wrapping ErrNotFound when there is
// none. Empty sessions (a run killed before its first message, by builds
// that wrote the row first) are skipped.
func (s *SQLite) Latest(ctx context.Context, source string) (Session, error) {
	list, err := s.List(ctx, ListOptions{Limit: 1, Source: source, NonEmpty: true})
	if err != nil {
		return Session{}, err
	}
	if len(list) == 0 {
		if source != "" {
			return Session{}, notFound(fmt.Sprintf("no %s session yet", source))
		}
		return Session{}, notFound("no session yet")
	}
	return list[0], nil
}

// Resolve finds the session a person means by ref: "latest", an exact id,
// a title (case-insensitive), a unique prefix of an id, or a unique prefix
// of a title, in that order.
// A prefix matching several sessions is an error listing them.
func (s *SQLite) Resolve(ctx context.Context, ref string) (Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Session{}, fmt.Errorf("empty session reference: give an id, an id prefix, a title or \"latest\"")
	}
	if strings.EqualFold(ref, "latest") {
		return s.Latest(ctx, "")
	}
	if x, err := s.Session(ctx, ref); err == nil || !errors.Is(err, ErrNotFound) {
		return x, err
	}
	row := s.stmts.queryRow(ctx, s.db, "SELECT "+sessionColumns+" FROM sessions AS s WHERE s.title = ?", ref)
	if x, err := scanSession(row); err == nil || !errors.Is(err, sql.ErrNoRows) {
		return x, err
	}
	if isIDPrefix(ref) {
		rows, err := s.db.QueryContext(ctx, "SELECT "+sessionColumns+
			" FROM sessions AS s WHERE s.id GLOB ? || '*' ORDER BY s.id LIMIT 11", ref)
		if err != nil {
			return Session{}, err
		}
		var found []Session
		for rows.Next() {
			x, err := scanSession(rows)
			if err != nil {
				rows.Close()
				return Session{}, err
			}
			found = append(found, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return Session{}, err
		}
		switch {
		case len(found) == 1:
			return found[0], nil
		case len(found) > 1:
			var b strings.Builder
			fmt.Fprintf(&b, "session reference %q is ambiguous; it matches:", ref)
			for i, x := range found {
				if i == 10 {
					b.WriteString("\n  …")
					break
				}
				fmt.Fprintf(&b, "\n  %s", x.ID)
				if x.Title != "" {
					fmt.Fprintf(&b, "  %q", x.Title)
				}
			}
			b.WriteString("\ngive more characters of the id")
			return Session{}, errors.New(b.String())
		}
	}
	if x, err := s.resolveTitlePrefix(ctx, ref); err == nil || !errors.Is(err, ErrNotFound) {
		return x, err
	}
	return Session{}, notFound(fmt.Sprintf("no session matches %q (run `hermes sessions list`)", ref))
}

// resolveTitlePrefix finds the one session whose title starts with ref
// (case-insensitive, as Hermes Agent's --resume does with titles); several
// are an error listing them, none is ErrNotFound.
func (s *SQLite) resolveTitlePrefix(ctx context.Context, ref string) (Session, error) {
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(ref)
	rows, err := s.db.QueryContext(ctx, "SELECT "+sessionColumns+
		` FROM sessions AS s WHERE s.title LIKE ? || '%' ESCAPE '\' ORDER BY s.started_at DESC LIMIT 11`, esc)
	if err != nil {
		return Session{}, err
	}
	defer rows.Close()
	var found []Session
	for rows.Next() {
		x, err := scanSession(rows)
		if err != nil {
			return Session{}, err
		}
		found = append(found, x)
	}
	if err := rows.Err(); err != nil {
		return Session{}, err
	}
	switch len(found) {
	case 0:
		return Session{}, notFound(fmt.Sprintf("no session title starts with %q", ref))
	case 1:
		return found[0], nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "session reference %q is ambiguous; these titles start with it:", ref)
	for i, x := range found {
		if i == 10 {
			b.WriteString("\n  …")
			break
		}
		fmt.Fprintf(&b, "\n  %s  %q", x.ID, x.Title)
	}
	b.WriteString("\ngive more of the title, or the id")
	return Session{}, errors.New(b.String())
}

// isIDPrefix reports whether ref can only be part of an id (no GLOB
// metacharacters).
func isIDPrefix(ref string) bool {
	for _, r := range ref {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// ListOptions filters List. Limit ≤ 0 means 50.
type ListOptions struct {
	Limit    int
	Source   string // "" = all sources
	NonEmpty bool   // only sessions with at least one message
}

// List returns sessions, most recently updated first, each with a Preview
// of its first user message.
func (s *SQLite) List(ctx context.Context, o ListOptions) ([]Session, error) {
	if o.Limit <= 0 {
		o.Limit = 50
	}
	q := "SELECT " + sessionColumns + `,
		coalesce((SELECT substr(m.content, 1, 120) FROM messages AS m
			WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.seq LIMIT 1), '')
		FROM sessions AS s`
	args := []any{}
	var where []string
	if o.Source != "" {
		where = append(where, "s.source = ?")
		args = append(args, o.Source)
	}
	if o.NonEmpty {
		where = append(where, "s.message_count > 0")
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY s.updated_at DESC, s.id DESC LIMIT ?"
	args = append(args, o.Limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
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

// SetTitle sets a session's title (trimmed, control characters removed, at
// most MaxTitleLen characters); an empty title clears it. Titles are unique
// regardless of case: a title another session holds is an error naming it.
//
// A title that looks like a session id (the shape YYYYMMDD_HHMMSS_xxxxxx or
// a prefix of it from "YYYYMMDD_", or any existing session's id) is
// refused: Resolve tries ids before titles, so such a title could never be
// used, or would hide an id prefix.
func (s *SQLite) SetTitle(ctx context.Context, id, title string) error {
	title = cleanTitle(title)
	if len([]rune(title)) > MaxTitleLen {
		return fmt.Errorf("title is %d characters; the limit is %d", len([]rune(title)), MaxTitleLen)
	}
	if err := s.checkTitleNotID(ctx, s.db, title); err != nil {
		return err
	}
	var v any
	if title != "" {
		v = title
	}
	res, err := s.exec(ctx, "UPDATE sessions SET title = ? WHERE id = ?", v, id)
	if err != nil {
		if isConstraint(err, "sessions.title") {
			var other string
			_ = s.db.QueryRowContext(ctx, "SELECT id FROM sessions WHERE title = ?", title).Scan(&other)
			return fmt.Errorf("title %q is already used by session %s; choose another title", title, other)
		}
		return fmt.Errorf("set title: %w", err)
	}
	return mustAffect(res, id)
}

// queryer is what checkTitleNotID needs from a *sql.DB or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// checkTitleNotID returns an error when a cleaned title looks like a
// session id (see SetTitle), nil otherwise.
func (s *SQLite) checkTitleNotID(ctx context.Context, q queryer, title string) error {
	if title == "" {
		return nil
	}
	const fix = `; choose a title with words, e.g. "deploy fix"`
	if hasSessionIDShape(title) {
		return fmt.Errorf("title %q looks like a session id (YYYYMMDD_HHMMSS_xxxxxx)%s", title, fix)
	}
	var other string
	err := q.QueryRowContext(ctx, "SELECT id FROM sessions WHERE id = ? COLLATE NOCASE", title).Scan(&other)
	if err == nil {
		return fmt.Errorf("title %q looks like a session id: it is the id of session %s%s", title, other, fix)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("check title: %w", err)
	}
	return nil
}

// IsSessionID reports whether t has the shape of a whole session id
// (20261130_145500_a1b2c3), as boxes of sessions are named.
func IsSessionID(t string) bool {
	return len(t) == len("20261130_145500_a1b2c3") && hasSessionIDShape(t)
}

// hasSessionIDShape reports whether t is a session id
// (20261130_145500_a1b2c3, any case) or a prefix of one at least as long
// as its date and underscore ("20261130_").
func hasSessionIDShape(t string) bool {
	const shape = "dddddddd_dddddd_xxxxxx"
	if len(t) < len("20261130_") || len(t) > len(shape) {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch shape[i] {
		case 'd':
			if c < '0' || c > '9' {
				return false
			}
		case '_':
			if c != '_' {
				return false
			}
		case 'x':
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

func cleanTitle(t string) string {
	t = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, t)
	return strings.Join(strings.Fields(t), " ")
}

// SetSystemPrompt stores the system prompt a session was built with, so a
// resumed session sends byte-identical text.
func (s *SQLite) SetSystemPrompt(ctx context.Context, id, prompt string) error {
	res, err := s.exec(ctx, "UPDATE sessions SET system_prompt = ? WHERE id = ?", prompt, id)
	if err != nil {
		return fmt.Errorf("set system prompt: %w", err)
	}
	return mustAffect(res, id)
}

// SetMetadata merges patch (a JSON object, RFC 7396 merge patch) into the
// session's metadata, e.g. {"box": {"id": "..."}, "task": "..."}.
func (s *SQLite) SetMetadata(ctx context.Context, id string, patch json.RawMessage) error {
	var obj map[string]any
	if err := json.Unmarshal(patch, &obj); err != nil {
		return fmt.Errorf("session metadata must be a JSON object: %w", err)
	}
	res, err := s.exec(ctx, "UPDATE sessions SET metadata = json_patch(metadata, ?) WHERE id = ?", string(patch), id)
	if err != nil {
		return fmt.Errorf("set metadata: %w", err)
	}
	return mustAffect(res, id)
}

const addUsage = `UPDATE sessions SET
	input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
	cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,
	reasoning_tokens = reasoning_tokens + ?, api_call_count = api_call_count + ?, updated_at = ?
	WHERE id = ?`

func usageArgs(id string, u llm.Usage, apiCalls int, now time.Time) []any {
	return []any{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, apiCalls,
		millis(now), id}
}

// AddUsage adds one or more model calls' token usage and apiCalls to the
// session's totals.
func (s *SQLite) AddUsage(ctx context.Context, id string, u llm.Usage, apiCalls int) error {
	err := s.group(ctx, []string{addUsage}, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, addUsage, usageArgs(id, u, apiCalls, s.now())...)
		if err != nil {
			return err
		}
		return mustAffect(res, id)
	})
	if err != nil {
		return fmt.Errorf("add usage: %w", err)
	}
	return nil
}

// EndSession records that a session ended and why (completed, failed,
// cancelled, max_turns...). A resumed session may be ended again.
func (s *SQLite) EndSession(ctx context.Context, id, reason string) error {
	now := millis(s.now())
	res, err := s.exec(ctx, "UPDATE sessions SET ended_at = ?, end_reason = ?, updated_at = ? WHERE id = ?",
		now, reason, now, id)
	if err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return mustAffect(res, id)
}

// Delete removes a session and all its messages (and their index entries).
// Sessions that named it as parent keep existing without a parent.
func (s *SQLite) Delete(ctx context.Context, id string) error {
	res, err := s.exec(ctx, "DELETE FROM sessions WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return mustAffect(res, id)
}

// PruneEmpty deletes sessions that have no messages, were last updated
// more than olderThan ago and are not locked (see LockSession): the rows a
// run killed before its first message left behind. It returns how many it
// deleted. It first looks for such rows with a read, so a start that
// finds none (the usual case) neither takes the write lock nor compiles
// the DELETE, whose cascade to messages and their index triggers made it
// the costliest statement of a one-shot run to prepare.
func (s *SQLite) PruneEmpty(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := millis(s.now().Add(-olderThan))
	var found int
	if err := s.stmts.queryRow(ctx, s.db, `SELECT EXISTS (SELECT 1 FROM sessions WHERE message_count = 0
		AND updated_at < ? AND id NOT IN (SELECT session_id FROM session_locks))`, cutoff).Scan(&found); err != nil {
		return 0, fmt.Errorf("prune empty sessions: %w", err)
	}
	if found == 0 {
		return 0, nil
	}
	res, err := s.exec(ctx, `DELETE FROM sessions WHERE message_count = 0 AND updated_at < ?
		AND id NOT IN (SELECT session_id FROM session_locks)`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune empty sessions: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func mustAffect(res sql.Result, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	return nil
}

// isConstraint reports whether err is a SQLite constraint failure mentioning
// what (e.g. "sessions.title", "FOREIGN KEY").
func isConstraint(err error, what string) bool {
	msg := err.Error()
	return strings.Contains(msg, "constraint failed") && strings.Contains(msg, what)
}
