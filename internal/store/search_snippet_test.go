package store

import (
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

const snippetText = "The payments service crashed at startup because the handler named handleCheckoutRequest " +
	"dereferenced a nil cart pointer; the fix adds a guard and a regression test for empty carts in every region."

// A substring match shows enough text around it to be read: at least 60
// characters either side when the message has them, not a few trigrams.
func TestSubstringSnippetHasContext(t *testing.T) {
	st := openTestStore(t, "")
	s := mustCreate(t, st, NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleAssistant, Content: snippetText})
	hits := search(t, st, SearchOptions{Query: "CheckoutReq"})
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
func TestSearchHighlightMarkers(t *testing.T) {
	st := openTestStore(t, "")
	s := mustCreate(t, st, NewSession{})
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleAssistant, Content: snippetText})
	for query, want := range map[string]string{
		"pointer":     "[pointer]",     // word index
		"CheckoutReq": "[CheckoutReq]", // trigram index
		"ck":          "Che[ck]out",    // scan: shorter than a trigram
	} {
		hits := search(t, st, SearchOptions{Query: query, Highlight: [2]string{"[", "]"}})
		if len(hits) != 1 || !strings.Contains(hits[0].Snippet, want) || strings.Contains(hits[0].Snippet, "**") {
			t.Errorf("%s: hits = %+v", query, hits)
		}
	}
}

// Regression (issue 8): `sessions search` printed a whole 20 KB message,
// because FTS5 cuts snippets by tokens and the tokens next to the match
// were 10,000 characters each. A snippet is at most MaxSnippetChars
// (plus the "…" marks) and keeps the match.
func TestSearchSnippetIsBounded(t *testing.T) {
	st := openTestStore(t, "")
	s := mustCreate(t, st, NewSession{})
	big := strings.Repeat("x", 10000) + " needle " + strings.Repeat("y", 10000)
	mustAppend(t, st, s.ID, llm.Message{Role: llm.RoleTool, ToolCallID: "c", ToolName: "terminal", Content: big})
	for _, q := range []string{"needle", "eedl"} {
		hits := search(t, st, SearchOptions{Query: q})
		if len(hits) != 1 {
			t.Fatalf("%s: hits = %d", q, len(hits))
		}
		snip := hits[0].Snippet
		if n := len([]rune(snip)); n > MaxSnippetChars+2 || !strings.Contains(snip, "**") || !strings.Contains(snip, "eedl") {
			t.Errorf("%s: snippet of %d characters: %.200q", q, n, snip)
		}
	}
}
