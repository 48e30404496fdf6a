package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

const insertMessage = `INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, tool_name,
	is_error, reasoning, reasoning_signature, reasoning_details, redacted_thinking, finish_reason, created_at, parts,
	tool_names, tool_args, active, model, provider)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`

func insertArgs(sessionID string, seq int64, r store.EncodedMessage, at time.Time, active bool) []any {
	return []any{sessionID, seq, r.Role, r.Content, nullable(r.ToolCalls), nullable(r.ToolCallID), nullable(r.ToolName),
		r.IsError, nullable(r.Reasoning), nullable(r.Signature), nullable(r.Details), nullable(r.Redacted),
		nullable(r.FinishReason), millis(at), nullable(r.Parts), r.ToolNames, r.ToolArgs, active,
		nullable(r.Model), nullable(r.Provider)}
}

// appendTx adds r at the end of a session inside tx and returns its seq.
// The UPDATE of the session row comes first: its row lock orders
// concurrent appends to one session (from any replica), so each reads the
// previous one's seq.
func appendTx(ctx context.Context, tx pgx.Tx, sessionID string, r store.EncodedMessage, now time.Time) (int64, error) {
	calls := 0
	if r.ToolCalls != "" {
		var m llm.Message
		if err := r.Decode(&m); err != nil {
			return 0, err
		}
		calls = len(m.ToolCalls)
	}
	tag, err := tx.Exec(ctx, `UPDATE sessions SET message_count = message_count + 1,
		tool_call_count = tool_call_count + $1, updated_at = $2 WHERE id = $3`, calls, millis(now), sessionID)
	if err != nil {
		return 0, err
	}
	if err := mustAffect(tag.RowsAffected(), sessionID); err != nil {
		return 0, err
	}
	var seq int64
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = $1", sessionID).Scan(&seq); err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, insertMessage, insertArgs(sessionID, seq, r, now, true)...)
	return seq, err
}

// AppendMessage stores m at the end of the session and returns its seq.
func (db *DB) AppendMessage(ctx context.Context, sessionID string, m llm.Message) (int64, error) {
	return db.AppendMessageUsage(ctx, sessionID, m, llm.Usage{}, -1)
}

// AppendMessageUsage stores m and adds the usage of the call that made it,
// in one transaction (apiCalls < 0: no usage).
func (db *DB) AppendMessageUsage(ctx context.Context, sessionID string, m llm.Message, u llm.Usage, apiCalls int) (int64, error) {
	r, err := store.EncodeMessage(m)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if err := db.checkTurnLock(ctx, tx, sessionID); err != nil {
			return err
		}
		now := db.now()
		if seq, err = appendTx(ctx, tx, sessionID, r, now); err != nil || apiCalls < 0 {
			return err
		}
		_, err = tx.Exec(ctx, addUsage, usageArgs(sessionID, u, apiCalls, now)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("append message to session %s: %w", sessionID, err)
	}
	return seq, nil
}

// Messages returns the active conversation of a session in order.
func (db *DB) Messages(ctx context.Context, sessionID string) ([]llm.Message, error) {
	stored, err := db.StoredMessages(ctx, sessionID, false)
	if err != nil {
		return nil, err
	}
	out := make([]llm.Message, len(stored))
	for i, m := range stored {
		out[i] = m.Message
	}
	return out, nil
}

// StoredMessages returns a session's messages ordered by seq.
func (db *DB) StoredMessages(ctx context.Context, sessionID string, withArchived bool) ([]store.StoredMessage, error) {
	if _, err := db.Session(ctx, sessionID); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT id, session_id, seq, active, created_at, role, content,
		coalesce(tool_calls, ''), coalesce(tool_call_id, ''), coalesce(tool_name, ''), is_error, coalesce(reasoning, ''),
		coalesce(reasoning_signature, ''), coalesce(reasoning_details, ''), coalesce(redacted_thinking, ''),
		coalesce(finish_reason, ''), coalesce(parts, ''), coalesce(model, ''), coalesce(provider, '')
		FROM messages WHERE session_id = $1 AND (active OR $2) ORDER BY seq, active, id`, sessionID, withArchived)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.StoredMessage
	for rows.Next() {
		var m store.StoredMessage
		var e store.EncodedMessage
		var created int64
		if err := rows.Scan(&m.ID, &m.SessionID, &m.Seq, &m.Active, &created, &e.Role, &e.Content, &e.ToolCalls,
			&e.ToolCallID, &e.ToolName, &e.IsError, &e.Reasoning, &e.Signature, &e.Details, &e.Redacted,
			&e.FinishReason, &e.Parts, &e.Model, &e.Provider); err != nil {
			return nil, err
		}
		if err := e.Decode(&m.Message); err != nil {
			return nil, fmt.Errorf("message %d: %w", m.ID, err)
		}
		m.CreatedAt = fromMillis(created)
		out = append(out, m)
	}
	return out, rows.Err()
}

// ArchiveMessages archives the active messages fromSeq..toSeq and puts
// summary at fromSeq (context compression).
func (db *DB) ArchiveMessages(ctx context.Context, sessionID string, fromSeq, toSeq int64, summary llm.Message) (int64, error) {
	r, err := store.EncodeMessage(summary)
	if err != nil {
		return 0, err
	}
	if fromSeq > toSeq {
		return 0, fmt.Errorf("archive range %d..%d is empty", fromSeq, toSeq)
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		now := db.now()
		tag, err := tx.Exec(ctx, `UPDATE sessions SET message_count = message_count + 1,
			tool_call_count = tool_call_count + $1, updated_at = $2 WHERE id = $3`, len(summary.ToolCalls), millis(now), sessionID)
		if err != nil {
			return err
		}
		if err := mustAffect(tag.RowsAffected(), sessionID); err != nil {
			return err
		}
		tag, err = tx.Exec(ctx, `UPDATE messages SET active = false
			WHERE session_id = $1 AND active AND seq BETWEEN $2 AND $3`, sessionID, fromSeq, toSeq)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("no active messages with seq %d..%d", fromSeq, toSeq)
		}
		_, err = tx.Exec(ctx, insertMessage, insertArgs(sessionID, fromSeq, r, now, true)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("archive messages of session %s: %w", sessionID, err)
	}
	return fromSeq, nil
}

// ReplaceActive makes msgs the whole active conversation (see
// store.PlanReplace), in one transaction.
func (db *DB) ReplaceActive(ctx context.Context, sessionID string, msgs []llm.Message) error {
	stored, err := db.StoredMessages(ctx, sessionID, false)
	if err != nil {
		return err
	}
	plan, change := store.PlanReplace(stored, msgs)
	if !change {
		return nil
	}
	rows := make([]store.EncodedMessage, len(plan.New))
	calls := 0
	for i, m := range plan.New {
		if rows[i], err = store.EncodeMessage(m); err != nil {
			return err
		}
		calls += len(m.ToolCalls)
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		now := db.now()
		tag, err := tx.Exec(ctx, `UPDATE sessions SET message_count = message_count + $1,
			tool_call_count = tool_call_count + $2, updated_at = $3 WHERE id = $4`, len(rows), calls, millis(now), sessionID)
		if err != nil {
			return err
		}
		if err := mustAffect(tag.RowsAffected(), sessionID); err != nil {
			return err
		}
		seq := plan.First
		if plan.InPlace {
			_, err = tx.Exec(ctx, `UPDATE messages SET active = false
				WHERE session_id = $1 AND active AND seq BETWEEN $2 AND $3`, sessionID, plan.First, plan.Last)
		} else {
			if err = tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = $1",
				sessionID).Scan(&seq); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE messages SET active = false WHERE session_id = $1 AND active`, sessionID)
		}
		if err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := tx.Exec(ctx, insertMessage, insertArgs(sessionID, seq, r, now, true)...); err != nil {
				return err
			}
			seq++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace the conversation of session %s: %w", sessionID, err)
	}
	return nil
}

// Import writes whole sessions in one transaction (all or nothing) and
// returns their ids (see store.ImportedSession).
func (db *DB) Import(ctx context.Context, sessions []store.ImportedSession) ([]string, error) {
	ids := make([]string, 0, len(sessions))
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		for _, is := range sessions {
			id, err := db.importOne(ctx, tx, is)
			if err != nil {
				return err
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

func (db *DB) importOne(ctx context.Context, tx pgx.Tx, is store.ImportedSession) (string, error) {
	id := is.ID
	var err error
	if id == "" {
		if id, err = store.SessionIDAt(is.StartedAt, db.rand); err != nil {
			return "", err
		}
	}
	src := is.Source
	if src == "" {
		src = "cli"
	}
	meta, err := store.CheckMetadata(is.Metadata)
	if err != nil {
		return "", fmt.Errorf("import session %s: %w", id, err)
	}
	rows := make([]store.EncodedMessage, len(is.Messages))
	calls := 0
	for i, m := range is.Messages {
		if rows[i], err = store.EncodeMessage(m.Message); err != nil {
			return "", fmt.Errorf("session %s message %d: %w", id, i+1, err)
		}
		calls += len(m.ToolCalls)
	}
	title := store.CleanTitle(is.Title)
	if err := db.checkTitle(ctx, tx, title); err != nil {
		return "", fmt.Errorf("import session %s: %w", id, err)
	}
	var ended any
	if !is.EndedAt.IsZero() {
		ended = millis(is.EndedAt)
	}
	u := is.Usage
	if _, err := tx.Exec(ctx, `INSERT INTO sessions (id, source, model, provider, title, system_prompt, cwd,
		started_at, updated_at, message_count, tool_call_count, parent_session_id, metadata, ended_at, end_reason,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, api_call_count)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
		id, src, is.Model, is.Provider, nullable(title), is.SystemPrompt, is.Cwd, millis(is.StartedAt),
		millis(is.Updated()), len(rows), calls, nullable(is.ParentSessionID), meta, ended, nullable(is.EndReason),
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, is.APICallCount); err != nil {
		return "", fmt.Errorf("import session %s: %w", id, err)
	}
	batch := &pgx.Batch{}
	for i, r := range rows {
		m := is.Messages[i]
		batch.Queue(insertMessage, insertArgs(id, m.SeqOf(i), r, m.CreatedAt, !m.Archived)...)
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return "", fmt.Errorf("import session %s: %w", id, err)
	}
	return id, nil
}
