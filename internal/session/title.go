package session

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/store"
	"github.com/hermes-go/hermes/internal/termsafe"
)

// titleWords is how long an automatic title is at most, in characters
// (cut at a word boundary; store.MaxTitleLen bounds any title).
const titleWords = 60

// autoTitle gives a session without a title one after its first exchange,
// as Hermes Agent does, so `sessions list` shows it and `--resume TITLE`
// (or a prefix of it) finds the session. At once, with no model call: the
// first prompt's first line, cut at a word before titleWords characters,
// made unique with " #2", " #3"... Then, when modelTitles says so, the
// auxiliary title model writes a better one in the background
// (modelTitle); the answer is never delayed by it. A title set before
// (with /title or `sessions rename`) is kept; failures are ignored (a
// title is never worth failing a turn for).
func (s *Session) autoTitle(ctx context.Context, prompt, answer string) {
	st := s.rt.store
	cur, err := st.Session(ctx, s.id)
	if err != nil || cur.Title != "" {
		return
	}
	fallback := s.setUniqueTitle(ctx, titleFrom(prompt), func(t string) error { return st.SetTitle(ctx, s.id, t) })
	if fallback == "" || !s.rt.modelTitles(s.source) {
		return
	}
	s.rt.titles.Add(1)
	go func() {
		defer s.rt.titles.Done()
		s.modelTitle(fallback, prompt, answer)
	}()
}

// setUniqueTitle stores base, else base #2 ... base #20 while the one
// before is already used; it returns the title stored, "" for none.
func (s *Session) setUniqueTitle(ctx context.Context, base string, set func(string) error) string {
	if base == "" {
		return ""
	}
	for n := 1; n <= 20; n++ {
		title := base
		if n > 1 {
			title = fmt.Sprintf("%s #%d", base, n)
		}
		err := set(title)
		if err == nil {
			return title
		}
		if !strings.Contains(err.Error(), "already used") {
			return ""
		}
	}
	return ""
}

// modelTitles says whether a session of source gets a model-written
// title after its first exchange. auxiliary.title_generation.enabled:
// false: never. A title model configured (its provider, model or
// base_url set): every session. Otherwise the main model writes it, and
// only for conversations of front ends that ask for it
// (Options.ModelTitles: the REPL/TUI, chat platforms, ACP), never for a
// one-shot run (source oneshot: -z, -Q), a cron run or an API-server
// request (each would pay a second model call for a title nobody reads),
// nor under --record/--replay (a recording holds the turns' calls only).
func (rt *Runtime) modelTitles(source string) bool {
	t := rt.cfg.Auxiliary.TitleGeneration
	if t.Enabled != nil && !*t.Enabled {
		return false
	}
	if rt.opts.RecordPath != "" || rt.opts.ReplayPath != "" || rt.provName == "replay" {
		// Only a provider of its own keeps a recording free of title calls.
		a, err := rt.Auxiliary(config.AuxTitle)
		return t.Settings().Configured() && err == nil && !a.Main
	}
	if t.Settings().Configured() {
		return true
	}
	switch source {
	case "oneshot", CronSource, "api_server":
		return false
	}
	return rt.opts.ModelTitles
}

// titlePrompt asks for a title (Hermes: 3-7 words, after the first exchange).
const titlePrompt = `You write the title of a conversation between a user and an AI assistant, for a list of past sessions.
Reply with the title only: 3 to 7 words, in the user's language, no quotes, no punctuation at the end, no explanation.`

// titleExcerpt bounds each of the prompt and the answer sent to the title
// model, in characters.
const titleExcerpt = 2000

// modelTitle asks the auxiliary title model for a title of the first
// exchange and stores it, sanitised (sanitizeTitle) and made unique, in
// place of fallback, unless the title was changed meanwhile. The call is
// bounded by the task's timeout; on any failure fallback stays.
func (s *Session) modelTitle(fallback, prompt, answer string) {
	rt := s.rt
	aux, err := rt.Auxiliary(config.AuxTitle)
	if err != nil {
		aux = rt.auxOrMain(config.AuxTitle) // told once by Auxiliary
	}
	// Not the turn's context: its values would route the provider's retry
	// notices to whatever turn the session runs next.
	ctx, cancel := context.WithTimeout(context.Background(), aux.Timeout)
	defer cancel()
	text := "User: " + truncateRunes(prompt, titleExcerpt) + "\n\nAssistant: " + truncateRunes(answer, titleExcerpt)
	st, err := aux.Provider.Stream(ctx, llm.Request{
		Model: aux.Model, System: titlePrompt,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: rt.redact.Redact(text)}},
	})
	if err != nil {
		return
	}
	resp, err := llm.Accumulate(st, nil)
	if err != nil {
		return
	}
	title := sanitizeTitle(rt.redact.Redact(resp.Message.Content))
	if title == "" || strings.EqualFold(title, fallback) {
		return
	}
	s.setUniqueTitle(ctx, title, func(t string) error {
		replaced, err := rt.store.ReplaceTitle(ctx, s.id, fallback, t)
		if err == nil && !replaced {
			return nil // renamed meanwhile: the person's title wins
		}
		return err
	})
}

// sanitizeTitle makes a model's answer a title: a reasoning block
// (<think>…</think>) and terminal escape sequences dropped, its first non-blank line, a "Title:" label,
// Markdown emphasis, heading marks and wrapping quotes removed, control
// and invisible format characters (bidi overrides, zero-width) dropped,
// whitespace collapsed, a final period removed, cut at a word before
// titleWords characters. The model wrote it: it may hold anything.
func sanitizeTitle(answer string) string {
	if i := strings.LastIndex(answer, "</think>"); i >= 0 {
		answer = answer[i+len("</think>"):]
	}
	answer = termsafe.Clean(answer) // escape sequences whole, ESC-less SGR too
	answer = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r':
			return '\n'
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == unicode.ReplacementChar:
			return ' '
		}
		return r
	}, answer)
	var line string
	for l := range strings.SplitSeq(answer, "\n") {
		if line = strings.Join(strings.Fields(l), " "); line != "" {
			break
		}
	}
	for {
		before := line
		line = strings.TrimSpace(strings.TrimLeft(line, "#>-*_` "))
		if l := strings.ToLower(line); strings.HasPrefix(l, "title:") {
			line = strings.TrimSpace(line[len("title:"):])
		}
		line = strings.Trim(line, "\"'`*_“”‘’«»「」 ")
		line = strings.TrimRight(line, ".。")
		if line == before {
			break
		}
	}
	return titleFrom(line)
}

// truncateRunes keeps the first n characters of s.
func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
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
