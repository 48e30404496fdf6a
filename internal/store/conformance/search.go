package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
)

// searchFixture stores two sessions with varied text and returns them.
func searchFixture(t *testing.T, tg *fixture) (store.Store, store.Session, store.Session) {
	t.Helper()
	st := tg.open(t)
	ctx := context.Background()
	a := mustCreate(t, st, store.NewSession{})
	b := mustCreate(t, st, store.NewSession{})
	if err := st.SetTitle(ctx, a.ID, "Payments outage"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, a.ID,
		llm.Message{Role: llm.RoleUser, Content: "The payments service is deploying slowly since the database migration."},
		llm.Message{Role: llm.RoleAssistant, Content: "Checking the rollout.", ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "terminal", Arguments: `{"command":"kubectl rollout status deploy/payments-api"}`}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "terminal", Content: "Waiting for \"payments-api\" rollout to finish"},
		llm.Message{Role: llm.RoleAssistant, Content: "The rollout is stuck on a failing readiness probe."},
	)
	mustAppend(t, st, b.ID,
		llm.Message{Role: llm.RoleUser, Content: "请检查数据库连接超时的问题"},
		llm.Message{Role: llm.RoleAssistant, Content: "数据库连接池已满，需要扩容。The database pool is full."},
		llm.Message{Role: llm.RoleUser, Content: "Also look at config.yaml and the redis cache"},
	)
	return st, a, b
}

func search(t *testing.T, st store.Store, o store.SearchOptions) []store.Hit {
	t.Helper()
	hits, err := st.Search(context.Background(), o)
	if err != nil {
		t.Fatalf("Search(%+v): %v", o, err)
	}
	return hits
}

func checkSearchFTSSyntax(t *testing.T, tg *fixture) {
	st, a, b := searchFixture(t, tg)
	cases := []struct {
		query string
		want  []string // contents (prefix) expected, any order
	}{
		// Stemming; tool args indexed. (The corpus avoids "deployment":
		// FTS5's Porter keeps it apart from deploy, PostgreSQL's Snowball
		// English does not.)
		{"deploy", []string{"The payments service is deploying", "Checking the rollout."}},
		{`"readiness probe"`, []string{"The rollout is stuck"}},
		{"rollout NOT stuck", []string{"Checking the rollout.", "Waiting for \"payments-api\""}},
		{"redis OR readiness", []string{"Also look at config.yaml", "The rollout is stuck"}},
		{"migrat*", []string{"The payments service"}},
		{"tool_name:terminal", []string{"Checking the rollout.", "Waiting for \"payments-api\""}},
		{`tool_args:kubectl`, []string{"Checking the rollout."}},
		{`"config.yaml"`, []string{"Also look at config.yaml"}},
		{`config.yaml`, []string{"Also look at config.yaml"}},                                       // quoted for the user
		{`payments-api rollout`, []string{"Checking the rollout.", "Waiting for \"payments-api\""}}, // hyphenated name
		{`tool_args:payments-api`, []string{"Checking the rollout."}},
	}
	msgs := map[int64]string{}
	for _, s := range []store.Session{a, b} {
		all, _ := st.StoredMessages(context.Background(), s.ID, true)
		for _, m := range all {
			msgs[m.ID] = m.Content
		}
	}
	for _, c := range cases {
		hits := search(t, st, store.SearchOptions{Query: c.query})
		if len(hits) != len(c.want) {
			t.Errorf("%s: %d hits %+v, want %d", c.query, len(hits), hits, len(c.want))
			continue
		}
		for _, w := range c.want {
			found := false
			for _, h := range hits {
				found = found || strings.HasPrefix(msgs[h.MessageID], w)
			}
			if !found {
				t.Errorf("%s: no hit for %q in %+v", c.query, w, hits)
			}
		}
		for _, h := range hits {
			if h.Index != "fts" || !strings.Contains(h.Snippet, "**") {
				t.Errorf("%s: hit %+v should come from the word index with a marked snippet", c.query, h)
			}
		}
	}

	hits := search(t, st, store.SearchOptions{Query: "rollout", Roles: []string{"assistant"}, Sort: store.SortOldest})
	if len(hits) != 2 || hits[0].Seq != 2 || hits[1].Seq != 4 || hits[0].Title != "Payments outage" ||
		hits[0].SessionID != a.ID || hits[0].Date.IsZero() || hits[0].Role != llm.RoleAssistant {
		t.Fatalf("assistant hits oldest first = %+v", hits)
	}
	newest := search(t, st, store.SearchOptions{Query: "rollout", Sort: store.SortNewest, Limit: 1})
	if len(newest) != 1 || newest[0].Seq != 4 {
		t.Fatalf("newest = %+v", newest)
	}
	if hits := search(t, st, store.SearchOptions{Query: "database", SessionID: b.ID}); len(hits) != 1 || hits[0].SessionID != b.ID {
		t.Fatalf("session-scoped search = %+v", hits)
	}
	if _, err := st.Search(context.Background(), store.SearchOptions{Query: "x", Roles: []string{"bot"}}); err == nil {
		t.Fatal("unknown role accepted")
	}
	if _, err := st.Search(context.Background(), store.SearchOptions{Query: "x", Sort: "sideways"}); err == nil {
		t.Fatal("unknown sort accepted")
	}
}

func checkSearchSubstringAndCJK(t *testing.T, tg *fixture) {
	st, a, b := searchFixture(t, tg)
	// "ymen" is inside "payments": no word matches it.
	hits := search(t, st, store.SearchOptions{Query: "ymen", Sort: store.SortOldest})
	if len(hits) != 3 || hits[0].Index != "trigram" || hits[0].SessionID != a.ID || !strings.Contains(hits[0].Snippet, "**") {
		t.Fatalf("substring hits = %+v", hits)
	}
	// CJK text has no spaces; the trigram index finds words inside it.
	hits = search(t, st, store.SearchOptions{Query: "数据库连接"})
	if len(hits) != 2 || hits[0].SessionID != b.ID || hits[0].Index != "trigram" {
		t.Fatalf("CJK hits = %+v", hits)
	}
	// Two characters are too short for trigrams: a scan still finds them.
	hits = search(t, st, store.SearchOptions{Query: "扩容"})
	if len(hits) != 1 || hits[0].Index != "scan" || !strings.Contains(hits[0].Snippet, "**扩容**") {
		t.Fatalf("short CJK hits = %+v", hits)
	}
	if hits := search(t, st, store.SearchOptions{Query: "zzzqqq"}); len(hits) != 0 {
		t.Fatalf("nonsense query hits = %+v", hits)
	}
}

// checkSearchQueryWithNULByte: a NUL byte in the query separates words
// (FTS5 reported "not valid FTS5 syntax (unterminated string)").
func checkSearchQueryWithNULByte(t *testing.T, tg *fixture) {
	st, _, b := searchFixture(t, tg)
	want := search(t, st, store.SearchOptions{Query: "database"})
	got, err := st.Search(context.Background(), store.SearchOptions{Query: "database\x00"})
	if err != nil || len(got) == 0 || len(got) != len(want) {
		t.Fatalf("search for database followed by NUL = %d hits, %v; want the %d hits of database", len(got), err, len(want))
	}
	if _, err := st.Search(context.Background(), store.SearchOptions{Query: "\x00", SessionID: b.ID}); err == nil {
		t.Error("a query of only a NUL byte was accepted, want the empty-query error")
	}
}

func checkSearchMalformedQuery(t *testing.T, tg *fixture) {
	st, _, _ := searchFixture(t, tg)
	for _, q := range []string{`"unterminated`, `nosuchcolumn:foo`, `AND`, `(rollout`, `rollout NOT`} {
		_, err := st.Search(context.Background(), store.SearchOptions{Query: q})
		var qe *store.QueryError
		if !errors.As(err, &qe) {
			t.Errorf("Search(%q) = %v, want *store.QueryError", q, err)
			continue
		}
		if !strings.Contains(err.Error(), q) || !strings.Contains(err.Error(), "double quotes") {
			t.Errorf("error for %q does not name the query and the fix: %v", q, err)
		}
	}
	if _, err := st.Search(context.Background(), store.SearchOptions{Query: "  "}); err == nil {
		t.Fatal("empty query accepted")
	}
	// The store keeps working afterwards.
	if hits := search(t, st, store.SearchOptions{Query: "redis"}); len(hits) != 1 {
		t.Fatalf("hits after errors = %+v", hits)
	}
}

func checkSearchRelevanceRanksDenseMatchesFirst(t *testing.T, tg *fixture) {
	st := tg.open(t)
	s := mustCreate(t, st, store.NewSession{})
	mustAppend(t, st, s.ID,
		llm.Message{Role: llm.RoleUser, Content: "canary canary canary failed"},
		llm.Message{Role: llm.RoleUser, Content: "a long note about many things " + strings.Repeat("other words here ", 30) + "and one canary"},
	)
	rel := search(t, st, store.SearchOptions{Query: "canary"})
	newest := search(t, st, store.SearchOptions{Query: "canary", Sort: store.SortNewest})
	if len(rel) != 2 || rel[0].Seq != 1 || newest[0].Seq != 2 {
		t.Fatalf("relevance = %+v, newest = %+v", rel, newest)
	}
}

// A quoted phrase of three or more words that the word index lacks is
// found as a substring in any case, in tool arguments too, with the role
// filter, and only in the messages that hold it.
func checkSearchLongPhraseCaseAndToolArgs(t *testing.T, tg *fixture) {
	st := tg.open(t)
	s := mustCreate(t, st, store.NewSession{})
	mustAppend(t, st, s.ID,
		llm.Message{Role: llm.RoleUser, Content: "the XDisk Kazoo Panicking again"},
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "terminal",
			Arguments: `{"command":"echo disk kazoo panicked"}`}}},
		llm.Message{Role: llm.RoleUser, Content: "disk and kazoo and panic, apart"},
		llm.Message{Role: llm.RoleUser, Content: "kazoo panels"},
	)
	hits := search(t, st, store.SearchOptions{Query: `"disk kazoo panic"`})
	if len(hits) != 2 || hits[0].Seq != 2 || hits[1].Seq != 1 {
		t.Fatalf("hits %+v, want the tool call (seq 2) then the first message", hits)
	}
	if hits[1].Index != "trigram" || !strings.Contains(hits[1].Snippet, "**Disk Kazoo Panic**") {
		t.Errorf("hit %+v, want a substring hit marking **Disk Kazoo Panic**", hits[1])
	}
	if hits := search(t, st, store.SearchOptions{Query: `"disk kazoo panic"`, Roles: []string{"user"}}); len(hits) != 1 {
		t.Errorf("user messages only: %d hits, want 1", len(hits))
	}
	for _, q := range []string{`"disk kazoo pan"`, `"disk kazoo zebra"`, `"sk kazoo panel"`} {
		want := map[string]int{`"disk kazoo pan"`: 2, `"disk kazoo zebra"`: 0, `"sk kazoo panel"`: 0}[q]
		if hits := search(t, st, store.SearchOptions{Query: q}); len(hits) != want {
			t.Errorf("%s: %d hits, want %d", q, len(hits), want)
		}
	}
}

const snippetText = "The payments service crashed at startup because the handler named handleCheckoutRequest " +
	"dereferenced a nil cart pointer; the fix adds a guard and a regression test for empty carts in every region."

// A substring match shows enough text around it to be read: at least 60
// characters either side when the message has them, not a few trigrams.
func checkSubstringSnippetHasContext(t *testing.T, tg *fixture) {
	st := tg.open(t)
	s := mustCreate(t, st, store.NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleAssistant, Content: snippetText})
	hits := search(t, st, store.SearchOptions{Query: "CheckoutReq"})
	if len(hits) != 1 || hits[0].Index != "trigram" {
		t.Fatalf("hits = %+v", hits)
	}
	snip := hits[0].Snippet
	before, after, ok := strings.Cut(snip, "**CheckoutReq**")
	if !ok {
		t.Fatalf("snippet %q does not mark the match", snip)
	}
	if len([]rune(before)) < 60 || len([]rune(after)) < 60 {
		t.Fatalf("snippet has too little context: %q", snip)
	}
	if !strings.Contains(snip, "handle**CheckoutReq**uest dereferenced") {
		t.Fatalf("snippet does not keep the words around the match: %q", snip)
	}
}

// Highlight replaces the ** markers on every path (words, substrings,
// short scans), so a terminal can print plain text.
func checkSearchHighlightMarkers(t *testing.T, tg *fixture) {
	st := tg.open(t)
	s := mustCreate(t, st, store.NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleAssistant, Content: snippetText})
	for query, want := range map[string]string{
		"pointer":     "[pointer]",     // word index
		"CheckoutReq": "[CheckoutReq]", // trigram index
		"ck":          "Che[ck]out",    // scan: shorter than a trigram
	} {
		hits := search(t, st, store.SearchOptions{Query: query, Highlight: [2]string{"[", "]"}})
		if len(hits) != 1 || !strings.Contains(hits[0].Snippet, want) || strings.Contains(hits[0].Snippet, "**") {
			t.Errorf("%s: hits = %+v", query, hits)
		}
	}
}

// Regression (issue 8): `sessions search` printed a whole 20 KB message,
// because FTS5 cuts snippets by tokens and the tokens next to the match
// were 10,000 characters each. A snippet is at most store.MaxSnippetChars
// (plus the "…" marks) and keeps the match.
func checkSearchSnippetIsBounded(t *testing.T, tg *fixture) {
	st := tg.open(t)
	s := mustCreate(t, st, store.NewSession{})
	big := strings.Repeat("x", 10000) + " needle " + strings.Repeat("y", 10000)
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleTool, ToolCallID: "c", ToolName: "terminal", Content: big})
	for _, q := range []string{"needle", "eedl"} {
		hits := search(t, st, store.SearchOptions{Query: q})
		if len(hits) != 1 {
			t.Fatalf("%s: hits = %d", q, len(hits))
		}
		snip := hits[0].Snippet
		if n := len([]rune(snip)); n > store.MaxSnippetChars+2 || !strings.Contains(snip, "**") || !strings.Contains(snip, "eedl") {
			t.Errorf("%s: snippet of %d characters: %.200q", q, n, snip)
		}
	}
}
