package database

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hermes-go/hermes/internal/store"
)

// CopyReport counts what Copy did.
type CopyReport struct {
	Sessions int // sessions in the source
	Messages int // their stored messages, archived ones included
	Copied   int // sessions this run copied
	Skipped  int // sessions the target already had (an earlier run)
}

// copyBatch is how many sessions one transaction of the target writes: a
// run stopped midway keeps every batch it finished.
const copyBatch = 50

// Copy copies every session of src that dst lacks into dst (hermes
// sessions migrate), with its messages (seqs, archived ones, times),
// title, usage, end and metadata. Sessions go oldest first, in
// transactions of copyBatch sessions, so a parent precedes its children
// and an interrupted run resumes where it stopped; sessions dst already
// has (by id) are skipped, so running it again copies nothing. At the end
// every source session must be in dst with the same message count, or
// Copy fails naming the first that differs. progress, if not nil, is
// called after each batch.
func Copy(ctx context.Context, src, dst store.Store, progress func(CopyReport)) (CopyReport, error) {
	var rep CopyReport
	all, err := src.List(ctx, store.ListOptions{Limit: 1 << 30})
	if err != nil {
		return rep, fmt.Errorf("list the sessions of %s: %w", src.Describe(), err)
	}
	slices.SortFunc(all, func(a, b store.Session) int { return a.StartedAt.Compare(b.StartedAt) })
	rep.Sessions = len(all)
	var batch []store.ImportedSession
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := dst.Import(ctx, batch); err != nil {
			return fmt.Errorf("copy into %s: %w", dst.Describe(), err)
		}
		rep.Copied += len(batch)
		batch = batch[:0]
		if progress != nil {
			progress(rep)
		}
		return nil
	}
	for _, s := range all {
		rep.Messages += s.MessageCount
		if _, err := dst.Session(ctx, s.ID); err == nil {
			rep.Skipped++
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return rep, err
		}
		is, err := imported(ctx, src, s)
		if err != nil {
			return rep, err
		}
		batch = append(batch, is)
		if len(batch) == copyBatch {
			if err := flush(); err != nil {
				return rep, err
			}
		}
	}
	if err := flush(); err != nil {
		return rep, err
	}
	return rep, verify(ctx, all, dst)
}

// imported reads session s of src whole.
func imported(ctx context.Context, src store.Store, s store.Session) (store.ImportedSession, error) {
	msgs, err := src.StoredMessages(ctx, s.ID, true)
	if err != nil {
		return store.ImportedSession{}, fmt.Errorf("read session %s: %w", s.ID, err)
	}
	is := store.ImportedSession{
		NewSession: store.NewSession{Source: s.Source, Model: s.Model, Provider: s.Provider, Cwd: s.Cwd,
			SystemPrompt: s.SystemPrompt, ParentSessionID: s.ParentSessionID, Metadata: s.Metadata},
		ID: s.ID, Title: s.Title, StartedAt: s.StartedAt, UpdatedAt: s.UpdatedAt, EndedAt: s.EndedAt,
		EndReason: s.EndReason, Usage: s.Usage, APICallCount: s.APICallCount,
	}
	for _, m := range msgs {
		is.Messages = append(is.Messages, store.ImportedMessage{Message: m.Message, CreatedAt: m.CreatedAt,
			Seq: m.Seq, Archived: !m.Active})
	}
	return is, nil
}

// verify checks that dst holds every session of want with its message
// and tool-call counts.
func verify(ctx context.Context, want []store.Session, dst store.Store) error {
	for _, s := range want {
		got, err := dst.Session(ctx, s.ID)
		if err != nil {
			return fmt.Errorf("check %s: session %s: %w", dst.Describe(), s.ID, err)
		}
		if got.MessageCount != s.MessageCount || got.ToolCallCount != s.ToolCallCount {
			return fmt.Errorf("check %s: session %s has %d messages and %d tool calls, the source %d and %d",
				dst.Describe(), s.ID, got.MessageCount, got.ToolCallCount, s.MessageCount, s.ToolCallCount)
		}
	}
	return nil
}
