package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// StoredMessage is a message with its place in the store.
type StoredMessage struct {
	llm.Message
	ID        int64 // unique across the store (the search index rowid)
	SessionID string
	Seq       int64 // position in the session's conversation
	Active    bool  // false once archived by context compression
	CreatedAt time.Time
}

// messageRow holds a message in the form its columns store it.
type messageRow struct {
	role, content                                 string
	toolCalls, toolCallID, toolName               any
	isError                                       int
	reasoning, signature, details, redacted, fini any
	parts                                         any
	model, provider                               any
}

func encodeMessage(m llm.Message) (messageRow, error) {
	switch m.Role {
	case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool:
	default:
		return messageRow{}, fmt.Errorf("message role %q is not one of system, user, assistant, tool", m.Role)
	}
	r := messageRow{role: string(m.Role), content: m.Content,
		toolCallID: nullable(m.ToolCallID), toolName: nullable(m.ToolName),
		reasoning: nullable(m.Reasoning), signature: nullable(m.ReasoningSignature),
		fini: nullable(m.FinishReason), model: nullable(m.Model), provider: nullable(m.Provider)}
	if m.IsError {
		r.isError = 1
	}
	if len(m.ToolCalls) > 0 {
		b, err := marshalLiteral(m.ToolCalls)
		if err != nil {
			return messageRow{}, err
		}
		r.toolCalls = b
	}
	if len(bytes.TrimSpace(m.ReasoningDetails)) > 0 {
		if !json.Valid(m.ReasoningDetails) {
			return messageRow{}, fmt.Errorf("reasoning_details is not valid JSON")
		}
		r.details = string(m.ReasoningDetails)
	}
	if len(m.Parts) > 0 {
		b, err := marshalLiteral(m.Parts)
		if err != nil {
			return messageRow{}, err
		}
		r.parts = b
	}
	if len(m.RedactedThinking) > 0 {
		b, err := marshalLiteral(m.RedactedThinking)
		if err != nil {
			return messageRow{}, err
		}
		r.redacted = b
	}
	return r, nil
}

// marshalLiteral encodes v as compact JSON without HTML escaping, so that
// <, > and & in tool arguments are indexed as typed.
func marshalLiteral(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

const insertMessage = `INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, tool_name,
	is_error, reasoning, reasoning_signature, reasoning_details, redacted_thinking, finish_reason, created_at, parts,
	model, provider)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// importMessage is insertMessage with the active flag (Import).
const importMessage = `INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, tool_name,
	is_error, reasoning, reasoning_signature, reasoning_details, redacted_thinking, finish_reason, created_at, parts,
	model, provider, active) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func insertArgs(sessionID string, seq int64, r messageRow, at time.Time) []any {
	return []any{sessionID, seq, r.role, r.content, r.toolCalls, r.toolCallID, r.toolName,
		r.isError, r.reasoning, r.signature, r.details, r.redacted, r.fini, millis(at), r.parts, r.model, r.provider}
}

// Messages returns the active conversation of a session in order: what a
// resumed session sends to the model. A missing session is an error
// wrapping ErrNotFound.
func (s *SQLite) Messages(ctx context.Context, sessionID string) ([]llm.Message, error) {
	stored, err := s.StoredMessages(ctx, sessionID, false)
	if err != nil {
		return nil, err
	}
	out := make([]llm.Message, len(stored))
	for i, m := range stored {
		out[i] = m.Message
	}
	return out, nil
}

// StoredMessages returns a session's messages ordered by seq (archived
// ones before the summary that replaced them when withArchived is set).
func (s *SQLite) StoredMessages(ctx context.Context, sessionID string, withArchived bool) ([]StoredMessage, error) {
	if _, err := s.Session(ctx, sessionID); err != nil {
		return nil, err
	}
	q := `SELECT id, session_id, seq, active, created_at, role, content, coalesce(tool_calls, ''),
		coalesce(tool_call_id, ''), coalesce(tool_name, ''), is_error, coalesce(reasoning, ''),
		coalesce(reasoning_signature, ''), coalesce(reasoning_details, ''), coalesce(redacted_thinking, ''),
		coalesce(finish_reason, ''), coalesce(parts, ''), coalesce(model, ''), coalesce(provider, '')
		FROM messages WHERE session_id = ?`
	if !withArchived {
		q += " AND active = 1"
	}
	q += " ORDER BY seq, active, id"
	rows, err := s.stmts.query(ctx, s.db, q, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StoredMessage
	for rows.Next() {
		var m StoredMessage
		var created int64
		var active, isError int
		var role, toolCalls, details, redacted, parts string
		if err := rows.Scan(&m.ID, &m.SessionID, &m.Seq, &active, &created, &role, &m.Content, &toolCalls,
			&m.ToolCallID, &m.ToolName, &isError, &m.Reasoning, &m.ReasoningSignature, &details, &redacted,
			&m.FinishReason, &parts, &m.Model, &m.Provider); err != nil {
			return nil, err
		}
		m.Role, m.Active, m.IsError, m.CreatedAt = llm.Role(role), active == 1, isError == 1, fromMillis(created)
		if toolCalls != "" {
			if err := json.Unmarshal([]byte(toolCalls), &m.ToolCalls); err != nil {
				return nil, fmt.Errorf("message %d: tool_calls: %w", m.ID, err)
			}
		}
		if parts != "" {
			if err := json.Unmarshal([]byte(parts), &m.Parts); err != nil {
				return nil, fmt.Errorf("message %d: parts: %w", m.ID, err)
			}
		}
		if details != "" {
			m.ReasoningDetails = json.RawMessage(details)
		}
		if redacted != "" {
			if err := json.Unmarshal([]byte(redacted), &m.RedactedThinking); err != nil {
				return nil, fmt.Errorf("message %d: redacted_thinking: %w", m.ID, err)
			}
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ArchiveMessages supports context compression: the active messages with
// fromSeq ≤ seq ≤ toSeq are marked archived (they stay stored and
// searchable but leave the conversation), and summary takes their place at
// seq fromSeq. Returns the summary's seq. The caller keeps a tool call and
// its result on the same side of the range.
func (s *SQLite) ArchiveMessages(ctx context.Context, sessionID string, fromSeq, toSeq int64, summary llm.Message) (int64, error) {
	row, err := encodeMessage(summary)
	if err != nil {
		return 0, err
	}
	if fromSeq > toSeq {
		return 0, fmt.Errorf("archive range %d..%d is empty", fromSeq, toSeq)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET message_count = message_count + 1,
			tool_call_count = tool_call_count + ?, updated_at = ? WHERE id = ?`, len(summary.ToolCalls), millis(now), sessionID)
		if err != nil {
			return err
		}
		if err := mustAffect(res, sessionID); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `UPDATE messages SET active = 0
			WHERE session_id = ? AND active = 1 AND seq BETWEEN ? AND ?`, sessionID, fromSeq, toSeq)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("no active messages with seq %d..%d", fromSeq, toSeq)
		}
		_, err = tx.ExecContext(ctx, insertMessage, insertArgs(sessionID, fromSeq, row, now)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("archive messages of session %s: %w", sessionID, err)
	}
	return fromSeq, nil
}

// ImportedSession is a whole session written by Import, for importing
// history from elsewhere (and for generating test corpora).
type ImportedSession struct {
	NewSession
	ID        string // "" = a fresh id from StartedAt
	Title     string
	StartedAt time.Time
	Messages  []ImportedMessage
	// A copy of a stored session (hermes sessions migrate) also keeps
	// these; zero values mean: updated when its last message was written,
	// still open, no usage.
	UpdatedAt    time.Time
	EndedAt      time.Time
	EndReason    string
	Usage        llm.Usage
	APICallCount int
}

// ImportedMessage is a message with the time it was written.
type ImportedMessage struct {
	llm.Message
	CreatedAt time.Time
	// Seq is the message's place (0: its position in Messages, from 1);
	// Archived marks a message context compression took out of the
	// conversation.
	Seq      int64
	Archived bool
}

// Updated is when an imported session was last updated: UpdatedAt, or
// the newest of its start and its messages.
func (is ImportedSession) Updated() time.Time {
	if !is.UpdatedAt.IsZero() {
		return is.UpdatedAt
	}
	updated := is.StartedAt
	for _, m := range is.Messages {
		if m.CreatedAt.After(updated) {
			updated = m.CreatedAt
		}
	}
	return updated
}

// SeqOf is the seq of the i-th imported message.
func (m ImportedMessage) SeqOf(i int) int64 {
	if m.Seq > 0 {
		return m.Seq
	}
	return int64(i + 1)
}

// Import writes whole sessions in one transaction (all or nothing) and
// returns their ids. It is the fast path for bulk writes; the agent uses
// AppendMessage.
func (s *SQLite) Import(ctx context.Context, sessions []ImportedSession) ([]string, error) {
	ids := make([]string, 0, len(sessions))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		insSession, err := tx.PrepareContext(ctx, `INSERT INTO sessions (id, source, model, provider, title,
			system_prompt, cwd, started_at, updated_at, message_count, tool_call_count, parent_session_id, metadata,
			ended_at, end_reason, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
			reasoning_tokens, api_call_count)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer insSession.Close()
		insMessage, err := tx.PrepareContext(ctx, importMessage)
		if err != nil {
			return err
		}
		defer insMessage.Close()
		for _, is := range sessions {
			id := is.ID
			if id == "" {
				if id, err = s.newSessionID(is.StartedAt); err != nil {
					return err
				}
			}
			src := is.Source
			if src == "" {
				src = "cli"
			}
			meta := "{}"
			if len(is.Metadata) > 0 {
				meta = string(is.Metadata)
			}
			updated, calls := is.Updated(), 0
			rows := make([]messageRow, len(is.Messages))
			for i, m := range is.Messages {
				if rows[i], err = encodeMessage(m.Message); err != nil {
					return fmt.Errorf("session %s message %d: %w", id, i+1, err)
				}
				calls += len(m.ToolCalls)
			}
			var ended any
			if !is.EndedAt.IsZero() {
				ended = millis(is.EndedAt)
			}
			if err := s.checkTitleNotID(ctx, tx, cleanTitle(is.Title)); err != nil {
				return fmt.Errorf("import session %s: %w", id, err)
			}
			if _, err := insSession.ExecContext(ctx, id, src, is.Model, is.Provider, nullable(cleanTitle(is.Title)),
				is.SystemPrompt, is.Cwd, millis(is.StartedAt), millis(updated), len(is.Messages), calls,
				nullable(is.ParentSessionID), meta, ended, nullable(is.EndReason), is.Usage.InputTokens,
				is.Usage.OutputTokens, is.Usage.CacheReadTokens, is.Usage.CacheWriteTokens, is.Usage.ReasoningTokens,
				is.APICallCount); err != nil {
				return fmt.Errorf("import session %s: %w", id, err)
			}
			for i, r := range rows {
				m := is.Messages[i]
				if _, err := insMessage.ExecContext(ctx, append(insertArgs(id, m.SeqOf(i), r, m.CreatedAt), !m.Archived)...); err != nil {
					return fmt.Errorf("import session %s message %d: %w", id, i+1, err)
				}
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
