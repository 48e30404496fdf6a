// Package conformance is the behaviour every session store (SQLite in
// internal/store, PostgreSQL in internal/store/postgres) owes hermes,
// written once and run against each from its own tests:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Target{New: func(t *testing.T) conformance.Opener { ... }})
//	}
//
// It checks sessions (ids, creation, resume, titles, metadata, usage,
// listing, deletion, pruning), messages (order, every field, archiving and
// in-place replacement for context compression, bad input refused without
// losing history), the deferred-session recorder, search (word syntax,
// substrings and CJK, short scans, snippets and highlight markers,
// relevance), and the per-session turn lock across two handles.
package conformance

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// Opener opens one store: every call opens the same database again, as
// another process would, with opts applied.
type Opener func(t *testing.T, opts ...store.Option) store.Store

// Target describes the store under test.
type Target struct {
	// New returns an Opener for a fresh, empty database (a temporary
	// state.db, a new PostgreSQL schema).
	New func(t *testing.T) Opener
	// Check, if set, checks the database's internal consistency (SQLite's
	// integrity and index checks); the suite calls it after deletions and
	// archiving.
	Check func(t *testing.T, st store.Store)
}

// fixture is one check's database.
type fixture struct {
	opener Opener
	clock  *testClock
	check  func(t *testing.T, st store.Store)
}

// testClock is a clock that moves one second forward on every reading.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// open opens the fixture's database with the test clock and a seeded
// source of id digits, and closes it when the test ends.
func (f *fixture) open(t *testing.T) store.Store {
	t.Helper()
	return f.openWith(t, store.WithClock(f.clock.Now), store.WithRandom(rand.NewChaCha8([32]byte{1})))
}

// openWith opens the fixture's database with opts only.
func (f *fixture) openWith(t *testing.T, opts ...store.Option) store.Store {
	t.Helper()
	st := f.opener(t, opts...)
	t.Cleanup(func() { st.Close() })
	return st
}

// Run runs every conformance check as a subtest of t.
func Run(t *testing.T, target Target) {
	checks := []struct {
		name string
		fn   func(t *testing.T, tg *fixture)
	}{
		{"SessionIDFromClockAndRandom", checkSessionIDFromClockAndRandom},
		{"AppendAndResumeKeepsOrderAndFields", checkAppendAndResumeKeepsOrderAndFields},
		{"AppendRejectsBadInputWithoutLosingHistory", checkAppendRejectsBadInputWithoutLosingHistory},
		{"Resolve", checkResolve},
		{"TitlesAreUnique", checkTitlesAreUnique},
		{"DeleteCascades", checkDeleteCascades},
		{"ArchiveMessagesForCompression", checkArchiveMessagesForCompression},
		{"UsageEndPromptMetadataAndList", checkUsageEndPromptMetadataAndList},
		{"ConcurrentWritersFromTwoConnections", checkConcurrentWritersFromTwoConnections},
		{"SearchFTSSyntax", checkSearchFTSSyntax},
		{"SearchSubstringAndCJK", checkSearchSubstringAndCJK},
		{"SearchQueryWithNULByte", checkSearchQueryWithNULByte},
		{"SearchMalformedQuery", checkSearchMalformedQuery},
		{"SearchRelevanceRanksDenseMatchesFirst", checkSearchRelevanceRanksDenseMatchesFirst},
		{"SearchLongPhraseCaseAndToolArgs", checkSearchLongPhraseCaseAndToolArgs},
		{"SubstringSnippetHasContext", checkSubstringSnippetHasContext},
		{"SearchHighlightMarkers", checkSearchHighlightMarkers},
		{"SearchSnippetIsBounded", checkSearchSnippetIsBounded},
		{"SetTitleRefusesIDLikeTitles", checkSetTitleRefusesIDLikeTitles},
		{"ResolveByTitlePrefix", checkResolveByTitlePrefix},
		{"DeferredSessionWrittenWithFirstMessage", checkDeferredSessionWrittenWithFirstMessage},
		{"EmptySessionsSkippedAndPruned", checkEmptySessionsSkippedAndPruned},
		{"LockSessionExclusive", checkLockSessionExclusive},
		{"WaitLockSession", checkWaitLockSession},
		{"ReplaceActiveArchivesOnlyTheMiddle", checkReplaceActiveArchivesOnlyTheMiddle},
		{"PartsRoundTrip", checkPartsRoundTrip},
		{"RecorderForgetDropsDeferredSession", checkRecorderForgetDropsDeferredSession},
		{"ReplaceTitleOnlyWhileUnchanged", checkReplaceTitleOnlyWhileUnchanged},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			f := &fixture{opener: target.New(t), check: target.Check,
				clock: &testClock{t: time.Date(2026, 11, 30, 14, 55, 0, 0, time.UTC)}}
			if f.check == nil {
				f.check = func(*testing.T, store.Store) {}
			}
			c.fn(t, f)
		})
	}
}

func mustCreate(t *testing.T, st store.Store, ns store.NewSession) store.Session {
	t.Helper()
	s, err := st.CreateSession(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAppend(t *testing.T, st store.Store, id string, msgs ...llm.Message) {
	t.Helper()
	for _, m := range msgs {
		if _, err := st.AppendMessage(context.Background(), id, m); err != nil {
			t.Fatal(err)
		}
	}
}
