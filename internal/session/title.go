package session

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/hermes-go/hermes/internal/store"
)

// titleWords is how long an automatic title is at most, in characters
// (cut at a word boundary; store.MaxTitleLen bounds any title).
const titleWords = 60

// autoTitle gives a session without a title one after its first exchange,
// as Hermes Agent does, so `sessions list` shows it and `--resume TITLE`
// (or a prefix of it) finds the session: the first prompt's first line,
// cut at a word before titleWords characters, made unique with " #2", " #3"...
// It costs one row update and no model call (so one-shot runs stay as
// fast, and no provider sees an extra request). A title set before (with
// /title or `sessions rename`) is kept; failures are ignored (a title is
// never worth failing a turn for).
func (s *Session) autoTitle(ctx context.Context, prompt string) {
	st := s.rt.store
	cur, err := st.Session(ctx, s.id)
	if err != nil || cur.Title != "" {
		return
	}
	base := titleFrom(prompt)
	if base == "" {
		return
	}
	for n := 1; n <= 20; n++ {
		title := base
		if n > 1 {
			title = fmt.Sprintf("%s #%d", base, n)
		}
		err := st.SetTitle(ctx, s.id, title)
		if err == nil || !strings.Contains(err.Error(), "already used") {
			return
		}
	}
}

// titleFrom is the title a prompt gives: its first non-blank line,
// whitespace collapsed, cut at a word boundary before titleWords
// characters ("…" marks a cut).
func titleFrom(prompt string) string {
	var line string
	for l := range strings.SplitSeq(prompt, "\n") {
		if line = strings.Join(strings.FieldsFunc(l, func(r rune) bool {
			return unicode.IsSpace(r) || unicode.IsControl(r)
		}), " "); line != "" {
			break
		}
	}
	r := []rune(line)
	if len(r) <= titleWords {
		return line
	}
	cut := titleWords - 1
	for i := cut; i > titleWords/2; i-- {
		if r[i] == ' ' {
			cut = i
			break
		}
	}
	title := strings.TrimRight(string(r[:cut]), " ") + "…"
	if len([]rune(title)) > store.MaxTitleLen {
		return string([]rune(title)[:store.MaxTitleLen])
	}
	return title
}
