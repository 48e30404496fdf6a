package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm"
)

// rankFixture imports one old session holding best, then sessions of
// newer messages: `newer` (each a weaker match) and filler text holding
// "the" in every message, so that "the" is very common. rankFloor is
// lowered so that a store of a few hundred messages behaves like a large
// one.
func rankFixture(t *testing.T, best string, newer []string) (*SQLite, map[int64]string) {
	t.Helper()
	st := openTestStore(t, "")
	st.rankFloor = 5
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	msg := func(text string) ImportedMessage {
		at = at.Add(time.Minute)
		return ImportedMessage{Message: llm.Message{Role: llm.RoleUser, Content: text}, CreatedAt: at}
	}
	sessions := []ImportedSession{{StartedAt: at, Messages: []ImportedMessage{msg(best)}}}
	var filler []ImportedMessage
	for i := range 500 {
		filler = append(filler, msg(fmt.Sprintf("the queue drained after retry %d of the worker", i)))
	}
	sessions = append(sessions, ImportedSession{StartedAt: at, Messages: filler})
	var later []ImportedMessage
	for _, text := range newer {
		later = append(later, msg(text))
	}
	sessions = append(sessions, ImportedSession{StartedAt: at, Messages: later})
	if _, err := st.Import(context.Background(), sessions); err != nil {
		t.Fatal(err)
	}
	texts := map[int64]string{}
	rows, err := st.db.Query("SELECT id, content FROM messages")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var c string
		if err := rows.Scan(&id, &c); err != nil {
			t.Fatal(err)
		}
		texts[id] = c
	}
	return st, texts
}

// The best bm25 match comes first when it is the oldest match and the
// query also holds a word in nearly every message ("the", left out of the
// score for cost): relevance, not recency, decides.
func TestSearchRelevanceBeatsRecency(t *testing.T) {
	best := "kazoo kazoo kazoo the"
	var newer []string
	for i := range 30 {
		newer = append(newer, fmt.Sprintf("the kazoo was mentioned once in run %d among many other words about "+
			"deployments, restarts, queues, certificates and the usual noise of an incident channel", i))
	}
	st, texts := rankFixture(t, best, newer)
	for _, q := range []string{"the kazoo", "kazoo", "kazoo the", "kazoo*"} {
		hits := search(t, st, SearchOptions{Query: q, Limit: 3})
		if len(hits) != 3 {
			t.Fatalf("%s: %d hits, want 3", q, len(hits))
		}
		if got := texts[hits[0].MessageID]; got != best {
			t.Errorf("%s: first hit %q, want the best match %q", q, got, best)
		}
	}
}

// A prefix query ranks by its stem as a word: a message holding the word
// itself often comes before newer ones holding only longer words.
func TestSearchPrefixRanksByStem(t *testing.T) {
	best := "roll roll roll now"
	var newer []string
	for i := range 20 {
		newer = append(newer, fmt.Sprintf("rollbacks of build %d went out with the release notes and a long changelog", i))
	}
	st, texts := rankFixture(t, best, newer)
	hits := search(t, st, SearchOptions{Query: "roll*", Limit: 5})
	if len(hits) != 5 || texts[hits[0].MessageID] != best {
		t.Fatalf("roll*: hits %+v, want %q first", hits, best)
	}
	for _, h := range hits[1:] {
		if !strings.HasPrefix(texts[h.MessageID], "rollbacks") {
			t.Errorf("roll*: unexpected hit %q", texts[h.MessageID])
		}
	}
}

// A query made only of very common words has no useful bm25 order: its
// hits come newest first, and only messages that match are returned.
func TestSearchVeryCommonWordsNewestFirst(t *testing.T) {
	st, texts := rankFixture(t, "an old note", []string{"the newest note"})
	hits := search(t, st, SearchOptions{Query: "the", Limit: 4})
	if len(hits) != 4 || texts[hits[0].MessageID] != "the newest note" {
		t.Fatalf("the: hits %+v, want the newest message first", hits)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].MessageID > hits[i-1].MessageID {
			t.Errorf("the: hit %d (id %d) is newer than hit %d (id %d)", i, hits[i].MessageID, i-1, hits[i-1].MessageID)
		}
	}
}

// plainPhrases accepts words, quoted phrases and prefixes joined by
// implicit AND, and nothing else.
func TestPlainPhrases(t *testing.T) {
	for q, want := range map[string]string{
		`timeout`:               "timeout",
		`nginx timeout`:         "nginx|timeout",
		`"payments-api" rollb*`: `"payments-api"|rollb*`,
		`"disk usage"* deploy`:  `"disk usage"*|deploy`,
		`a OR b`:                "",
		`tool_name:terminal`:    "",
		`(a b)`:                 "",
		`NEAR(a b)`:             "",
		`"unterminated`:         "",
		`"a"b`:                  "",
		`a*b`:                   "",
	} {
		got, ok := plainPhrases(q)
		if strings.Join(got, "|") != want || ok != (want != "") {
			t.Errorf("plainPhrases(%q) = %q, %v; want %q", q, got, ok, want)
		}
	}
}

// A literal scan (a query with a word too short for the trigram index)
// looks only at the newest messages of the store, but at all of a
// session's when searching one session.
func TestSearchScanBounded(t *testing.T) {
	st := openTestStore(t, "")
	st.scanLimit = 3
	a := mustCreate(t, st, NewSession{})
	mustAppend(t, st, a.ID, llm.Message{Role: llm.RoleUser, Content: "restart dbx now"})
	b := mustCreate(t, st, NewSession{})
	for i := range 5 {
		mustAppend(t, st, b.ID, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("filler %d", i)})
	}
	// "bx" is no word and too short for trigrams: a literal scan.
	if hits := search(t, st, SearchOptions{Query: "bx"}); len(hits) != 0 {
		t.Errorf("scan past the window: %+v", hits)
	}
	if hits := search(t, st, SearchOptions{Query: "bx", SessionID: a.ID}); len(hits) != 1 {
		t.Errorf("scan of one session: %d hits, want 1", len(hits))
	}
	mustAppend(t, st, b.ID, llm.Message{Role: llm.RoleUser, Content: "restart dbx again"})
	if hits := search(t, st, SearchOptions{Query: "bx"}); len(hits) != 1 {
		t.Errorf("scan in the window: %d hits, want 1", len(hits))
	}
}

// Loading a session reuses its prepared statement.
func TestStoredMessagesReusesStatement(t *testing.T) {
	st := openTestStore(t, "")
	s := mustCreate(t, st, NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleUser, Content: "hello"})
	cached := func() int {
		st.stmts.mu.Lock()
		defer st.stmts.mu.Unlock()
		n := 0
		for q := range st.stmts.stmts {
			if strings.Contains(q, "coalesce(parts, '')") {
				n++
			}
		}
		return n
	}
	for range 3 {
		if _, err := st.StoredMessages(context.Background(), s.ID, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := cached(); n != 1 {
		t.Errorf("%d cached statements load a session, want 1", n)
	}
}

// A search that passes its time bound is stopped and reported as slow,
// naming the query, rather than running on.
func TestSearchTimeout(t *testing.T) {
	st, _ := searchFixture(t)
	st.searchTimeout = time.Nanosecond
	_, err := st.Search(context.Background(), SearchOptions{Query: "rollout"})
	var se *SlowQueryError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), `"rollout"`) {
		t.Fatalf("got %v, want a *SlowQueryError naming the query", err)
	}
	st.searchTimeout = 0
	if hits := search(t, st, SearchOptions{Query: "rollout"}); len(hits) == 0 {
		t.Fatal("rollout found nothing with the default bound")
	}
}

// A quoted phrase of three or more words is still found as a substring
// (its first and last words cut), and one whose middle word is nowhere
// finds nothing.
func TestSearchLongPhraseSubstring(t *testing.T) {
	st := openTestStore(t, "")
	s := mustCreate(t, st, NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleUser, Content: "the xdisk kazudor panicking again"})
	if hits := search(t, st, SearchOptions{Query: `"disk kazudor panic"`}); len(hits) != 1 || hits[0].Index != "trigram" {
		t.Errorf("substring phrase: %+v, want one trigram hit", hits)
	}
	for _, q := range []string{`"disk kazoo panic"`, `"disk kazudor again"`, `"xdisk kazudor panicking again now"`} {
		if hits := search(t, st, SearchOptions{Query: q}); len(hits) != 0 {
			t.Errorf("%s: %+v, want none", q, hits)
		}
	}
	if hits := search(t, st, SearchOptions{Query: `"disk kazudor panicking ag"`}); len(hits) != 1 {
		t.Errorf("four-word substring: %+v, want one hit", hits)
	}
}

// The best bm25 match is found when it is older than the newest 1,000
// matches (the old ranking window): a query with fewer than rankCandidates
// matches ranks all of them.
func TestSearchRanksMatchesOlderThanNewestThousand(t *testing.T) {
	st := openTestStore(t, "")
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	msg := func(text string) ImportedMessage {
		at = at.Add(time.Minute)
		return ImportedMessage{Message: llm.Message{Role: llm.RoleUser, Content: text}, CreatedAt: at}
	}
	best := "zebra zebra zebra"
	sessions := []ImportedSession{{StartedAt: at, Messages: []ImportedMessage{msg(best)}}}
	var newer []ImportedMessage
	for i := range 1200 {
		newer = append(newer, msg(fmt.Sprintf("a zebra was seen once in run %d among many other words about "+
			"deployments, restarts, queues, certificates and the noise of an incident channel", i)))
	}
	sessions = append(sessions, ImportedSession{StartedAt: at, Messages: newer})
	if _, err := st.Import(context.Background(), sessions); err != nil {
		t.Fatal(err)
	}
	hits := search(t, st, SearchOptions{Query: "zebra", Limit: 3})
	if len(hits) != 3 || !strings.Contains(hits[0].Snippet, "**zebra** **zebra** **zebra**") {
		t.Fatalf("zebra: hits %+v, want the oldest message %q first", hits, best)
	}
}

// A role filter keeps relevance order and still finds its matches when the
// best-ranked messages all have another role.
func TestSearchRoleFilterBehindOtherRoles(t *testing.T) {
	st := openTestStore(t, "")
	s := mustCreate(t, st, NewSession{})
	for i := range 3 {
		mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleUser,
			Content: fmt.Sprintf("kazoo once in user message %d, among many more words about other things entirely", i)})
	}
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleUser, Content: "kazoo kazoo from the user"})
	for i := range 25 {
		mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleTool, ToolCallID: fmt.Sprint("c", i), ToolName: "terminal",
			Content: "kazoo kazoo kazoo"})
	}
	hits := search(t, st, SearchOptions{Query: "kazoo", Limit: 2, Roles: []string{"user"}})
	if len(hits) != 2 || hits[0].Seq != 4 {
		t.Fatalf("hits %+v, want 2 user messages, the one saying kazoo twice first", hits)
	}
	for _, h := range hits {
		if h.Role != llm.RoleUser {
			t.Errorf("hit %+v is not a user message", h)
		}
	}
	if hits := search(t, st, SearchOptions{Query: "kazoo", Limit: 3, Roles: []string{"tool"}}); len(hits) != 3 || hits[0].Role != llm.RoleTool {
		t.Errorf("tool hits %+v, want 3", hits)
	}
	if hits := search(t, st, SearchOptions{Query: "kazoo", Limit: 50, SessionID: s.ID, Roles: []string{"user"}}); len(hits) != 4 {
		t.Errorf("one session's user messages: %d hits, want 4", len(hits))
	}
}
