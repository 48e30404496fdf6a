package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-go/hermes/internal/llm"
)

// This file exports what every Store implementation shares with SQLite's:
// the rules for titles, metadata and session references, and the text
// side of search (query terms, excerpts), so that both give a person the
// same answers and the same errors.

// CleanTitle is a title as stored: control characters become spaces,
// runs of spaces one, ends trimmed.
func CleanTitle(t string) string { return cleanTitle(t) }

// CheckTitle checks a cleaned title's length and that it does not have a
// session id's shape; the caller still checks it is not an existing id
// (TitleIsIDError) and not another session's title (TitleTakenError).
func CheckTitle(title string) error {
	if n := len([]rune(title)); n > MaxTitleLen {
		return fmt.Errorf("title is %d characters; the limit is %d", n, MaxTitleLen)
	}
	if title != "" && hasSessionIDShape(title) {
		return fmt.Errorf("title %q looks like a session id (YYYYMMDD_HHMMSS_xxxxxx)%s", title, titleFix)
	}
	return nil
}

const titleFix = `; choose a title with words, e.g. "deploy fix"`

// TitleIsIDError is the error for a title that is the id of session other.
func TitleIsIDError(title, other string) error {
	return fmt.Errorf("title %q looks like a session id: it is the id of session %s%s", title, other, titleFix)
}

// TitleTakenError is the error for a title session other already holds.
func TitleTakenError(title, other string) error {
	return fmt.Errorf("title %q is already used by session %s; choose another title", title, other)
}

// CheckMetadata returns raw as stored metadata ("{}" when empty) or an
// error when it is not a JSON object.
func CheckMetadata(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "{}", nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		if err == nil {
			err = errors.New("null")
		}
		return "", fmt.Errorf("session metadata must be a JSON object: %w", err)
	}
	return string(raw), nil
}

// MergePatch applies an RFC 7396 JSON merge patch to the JSON object doc
// (what SQLite's json_patch does) and returns the result.
func MergePatch(doc string, patch json.RawMessage) (string, error) {
	var d, p map[string]any
	if err := json.Unmarshal([]byte(doc), &d); err != nil || d == nil {
		d = map[string]any{}
	}
	if err := json.Unmarshal(patch, &p); err != nil || p == nil {
		return "", fmt.Errorf("session metadata must be a JSON object")
	}
	return MarshalLiteral(mergeObject(d, p))
}

func mergeObject(d, p map[string]any) map[string]any {
	for k, v := range p {
		switch pv := v.(type) {
		case nil:
			delete(d, k)
		case map[string]any:
			dv, _ := d[k].(map[string]any)
			if dv == nil {
				dv = map[string]any{}
			}
			d[k] = mergeObject(dv, pv)
		default:
			d[k] = v
		}
	}
	return d
}

// MarshalLiteral encodes v as compact JSON without HTML escaping (tool
// arguments stay searchable as typed).
func MarshalLiteral(v any) (string, error) { return marshalLiteral(v) }

// EncodedMessage is a message in the text columns every store keeps; ""
// stands for NULL. ToolNames and ToolArgs are what search indexes besides
// the content: the result's tool name or the names of the calls, and the
// calls' raw arguments, space-separated.
type EncodedMessage struct {
	Role, Content, ToolCalls, ToolCallID, ToolName        string
	IsError                                               bool
	Reasoning, Signature, Details, Redacted, FinishReason string
	Parts                                                 string
	Model, Provider                                       string // who wrote an assistant message
	ToolNames, ToolArgs                                   string
}

// EncodeMessage checks m (its role, its JSON fields) and encodes it.
func EncodeMessage(m llm.Message) (EncodedMessage, error) {
	r, err := encodeMessage(m)
	if err != nil {
		return EncodedMessage{}, err
	}
	str := func(v any) string {
		s, _ := v.(string)
		return s
	}
	e := EncodedMessage{Role: r.role, Content: r.content, ToolCalls: str(r.toolCalls), ToolCallID: m.ToolCallID,
		ToolName: m.ToolName, IsError: m.IsError, Reasoning: m.Reasoning, Signature: m.ReasoningSignature,
		Details: str(r.details), Redacted: str(r.redacted), FinishReason: m.FinishReason, Parts: str(r.parts),
		Model: m.Model, Provider: m.Provider}
	names, args := []string{}, []string{}
	if m.ToolName != "" {
		names = append(names, m.ToolName)
	}
	for _, c := range m.ToolCalls {
		names = append(names, c.Name)
		args = append(args, c.Arguments)
	}
	e.ToolNames, e.ToolArgs = strings.Join(names, " "), strings.Join(args, " ")
	return e, nil
}

// Decode fills m from e (the inverse of EncodeMessage).
func (e EncodedMessage) Decode(m *llm.Message) error {
	m.Role, m.Content, m.ToolCallID, m.ToolName, m.IsError = llm.Role(e.Role), e.Content, e.ToolCallID, e.ToolName, e.IsError
	m.Reasoning, m.ReasoningSignature, m.FinishReason = e.Reasoning, e.Signature, e.FinishReason
	m.Model, m.Provider = e.Model, e.Provider
	if e.ToolCalls != "" {
		if err := json.Unmarshal([]byte(e.ToolCalls), &m.ToolCalls); err != nil {
			return fmt.Errorf("tool_calls: %w", err)
		}
	}
	if e.Parts != "" {
		if err := json.Unmarshal([]byte(e.Parts), &m.Parts); err != nil {
			return fmt.Errorf("parts: %w", err)
		}
	}
	if e.Details != "" {
		m.ReasoningDetails = json.RawMessage(e.Details)
	}
	if e.Redacted != "" {
		if err := json.Unmarshal([]byte(e.Redacted), &m.RedactedThinking); err != nil {
			return fmt.Errorf("redacted_thinking: %w", err)
		}
	}
	return nil
}

// IsIDPrefix reports whether ref can only be part of a session id.
func IsIDPrefix(ref string) bool { return isIDPrefix(ref) }

// AmbiguousIDError lists the sessions (at most 10 shown) whose id starts
// with ref.
func AmbiguousIDError(ref string, found []Session) error {
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
	return errors.New(b.String())
}

// AmbiguousTitleError lists the sessions (at most 10 shown) whose title
// starts with ref.
func AmbiguousTitleError(ref string, found []Session) error {
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
	return errors.New(b.String())
}

// NoTitlePrefixError and NoMatchError are Resolve's not-found errors.
func NoTitlePrefixError(ref string) error {
	return notFound(fmt.Sprintf("no session title starts with %q", ref))
}

// NoMatchError is the error for a reference nothing matches.
func NoMatchError(ref string) error {
	return notFound(fmt.Sprintf("no session matches %q (run `hermes sessions list`)", ref))
}

// NoSessionYetError is Latest's error when there is no session (of source).
func NoSessionYetError(source string) error {
	if source != "" {
		return notFound(fmt.Sprintf("no %s session yet", source))
	}
	return notFound("no session yet")
}

// Text search helpers (see search.go).

// Marks returns the Highlight markers, "**" by default.
func (o SearchOptions) Marks() (open, close string) { return o.marks() }

// QueryTerms returns the literal texts a query looks for.
func QueryTerms(q string) []string { return queryTerms(q) }

// Excerpt cuts content around the first occurrence of a term and marks
// every occurrence (see excerpt), bounded to MaxSnippetChars.
func Excerpt(content string, terms []string, open, close string) string {
	return capSnippet(excerpt(content, terms, open, close), open, MaxSnippetChars)
}

// HasCJK reports whether s holds Chinese, Japanese or Korean text.
func HasCJK(s string) bool { return hasCJK(s) }

// IsPlainText reports whether q uses no query operators.
func IsPlainText(q string) bool { return isPlainText(q) }

// HasShortWord reports whether q has a word shorter than a trigram.
func HasShortWord(q string) bool { return hasShortWord(q) }
