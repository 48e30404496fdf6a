package tui

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"

	"github.com/hermes-go/hermes/internal/atomicfile"
	"github.com/hermes-go/hermes/internal/workspacefile"
)

// maxEditorRows bounds the editor's height; longer input scrolls.
const maxEditorRows = 8

// newEditor is the multi-line input: Enter is handled by the TUI
// (send), Alt-Enter and Ctrl-J insert a newline; no length limit, so a
// large paste is kept whole.
func newEditor() textarea.Model {
	ta := textarea.New()
	ta.Prompt = "› "
	ta.ShowLineNumbers = false
	ta.CharLimit = 0
	// The editor grows with its content counted in visual rows (a long
	// line soft-wraps at the width and shows every row; counting logical
	// lines kept one row, so a long line scrolled sideways out of view),
	// up to maxEditorRows; MaxContentHeight lifts the legacy limit of
	// MaxHeight logical lines on what can be typed.
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = maxEditorRows
	ta.MaxContentHeight = math.MaxInt32
	ta.SetHeight(1)
	ta.Placeholder = "Ask anything · / for commands · @ for files"
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	s := textarea.DefaultDarkStyles()
	s.Focused.CursorLine = s.Focused.CursorLine.UnsetBackground()
	ta.SetStyles(s)
	ta.SetWidth(78)
	return ta
}

// historyFile is the input history in HERMES_HOME.
const historyFile = "tui_history"

// maxHistory bounds the entries kept.
const maxHistory = 1000

// history is the input history, oldest first, persisted in HERMES_HOME
// (one entry per line, newlines escaped) with atomic writes.
type history struct {
	path    string
	entries []string
	pos     int    // index being shown; len(entries) = the draft
	draft   string // what was typed before browsing
}

func loadHistory(home string) *history {
	h := &history{}
	if home != "" {
		h.path = filepath.Join(home, historyFile)
		if b, err := os.ReadFile(h.path); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if l != "" {
					h.entries = append(h.entries, unescapeEntry(l))
				}
			}
		}
	}
	h.pos = len(h.entries)
	return h
}

// add records text (not twice in a row) and saves the history.
func (h *history) add(text string) {
	if n := len(h.entries); n == 0 || h.entries[n-1] != text {
		h.entries = append(h.entries, text)
	}
	if len(h.entries) > maxHistory {
		h.entries = h.entries[len(h.entries)-maxHistory:]
	}
	h.pos, h.draft = len(h.entries), ""
	if h.path == "" {
		return
	}
	var b strings.Builder
	for _, e := range h.entries {
		b.WriteString(escapeEntry(e) + "\n")
	}
	// Best effort: a read-only HERMES_HOME must not stop the chat.
	_ = atomicfile.Write(h.path, []byte(b.String()), 0o600)
}

func escapeEntry(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func unescapeEntry(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// historyKey moves through the history with ↑/↓ when the cursor is on
// the editor's first/last line; it reports whether it did.
func (m *Model) historyKey(k string) bool {
	h := m.history
	switch {
	case k == "up" && m.input.Line() == 0 && h.pos > 0:
		if h.pos == len(h.entries) {
			h.draft = m.input.Value()
		}
		h.pos--
		m.input.SetValue(h.entries[h.pos])
	case k == "down" && m.input.Line() == m.input.LineCount()-1 && h.pos < len(h.entries):
		h.pos++
		if h.pos == len(h.entries) {
			m.input.SetValue(h.draft)
		} else {
			m.input.SetValue(h.entries[h.pos])
		}
	default:
		return false
	}
	return true
}

// completion is the open completion menu: slash commands or @paths.
type completion struct {
	items  []string
	sel    int
	prefix string // the word being completed, replaced on accept
}

func (c completion) active() bool { return len(c.items) > 0 }

func (c *completion) move(k string) {
	if k == "up" {
		c.sel = (c.sel + len(c.items) - 1) % len(c.items)
	} else {
		c.sel = (c.sel + 1) % len(c.items)
	}
}

// maxCompletions bounds the menu.
const maxCompletions = 8

func (c completion) view(m *Model) string {
	var lines []string
	for i, it := range c.items {
		if i == c.sel {
			lines = append(lines, m.styles.user.Render("▸ "+it))
		} else {
			lines = append(lines, m.styles.dim.Render("  "+it))
		}
	}
	return strings.Join(lines, "\n")
}

// updateCompletion opens the menu for a slash command being typed (the
// whole input) or an @path word under the cursor (the input's last word).
func (m *Model) updateCompletion() {
	m.complete = completion{}
	v := m.input.Value()
	if strings.HasPrefix(v, "/") && !strings.ContainsAny(v, " \n") {
		var items []string
		for _, c := range commands {
			if strings.HasPrefix(c.name, v) && c.name != v {
				items = append(items, c.name)
			}
		}
		m.complete = completion{items: firstN(items, maxCompletions), prefix: v}
		return
	}
	i := strings.LastIndexAny(v, " \n")
	word := v[i+1:]
	if strings.HasPrefix(word, "@") {
		m.complete = completion{items: firstN(pathCompletions(m.opts.Cwd, word[1:]), maxCompletions), prefix: word}
	}
}

// acceptCompletion replaces the word being completed with the choice.
func (m *Model) acceptCompletion() {
	c := m.complete
	choice := c.items[c.sel]
	v := m.input.Value()
	base := strings.TrimSuffix(v, c.prefix)
	if strings.HasPrefix(c.prefix, "@") {
		choice = "@" + choice
	} else {
		choice += " "
	}
	m.input.SetValue(base + choice)
	m.input.CursorEnd()
	m.complete = completion{}
	if strings.HasSuffix(choice, "/") {
		m.updateCompletion() // keep completing inside the directory
	}
}

// pathCompletions lists entries of cwd matching partial ("src/ma"):
// directories end with "/"; hidden entries only when asked for. A
// relative partial is listed with a workspacefile.Reader on cwd, so a
// directory linked out of the workspace is not listed; an absolute one is
// the person's own choice. Names with control characters are never
// offered (they would reach the terminal).
func pathCompletions(cwd, partial string) []string {
	dir, base := filepath.Split(partial)
	ents, err := listDir(cwd, dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) || workspacefile.HasControl(name) {
			continue
		}
		if e.IsDir() {
			name += "/"
		}
		out = append(out, dir+name)
	}
	sort.Strings(out)
	return out
}

// listDir lists dir: beneath cwd when it is relative.
func listDir(cwd, dir string) ([]fs.DirEntry, error) {
	if filepath.IsAbs(dir) {
		return os.ReadDir(dir)
	}
	r, err := workspacefile.Open(cwd, "")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if dir == "" {
		dir = "."
	}
	return r.ReadDir(dir)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Pastes longer than pasteInlineBytes or pasteInlineLines are held aside
// and shown in the editor as a placeholder (the editor redraws every line
// on each key, which a 100 KB paste would make slow); the placeholder is
// replaced by the text when the message is sent.
const (
	pasteInlineBytes = 2048
	pasteInlineLines = 20
)

// paste inserts text, or a placeholder for a large paste.
func (m *Model) paste(text string) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Count(text, "\n") + 1
	if len(text) <= pasteInlineBytes && lines <= pasteInlineLines {
		m.input.InsertString(text)
		return
	}
	if m.pastes == nil {
		m.pastes = map[string]string{}
	}
	ph := fmt.Sprintf("[pasted text #%d · %d lines · %s]", len(m.pastes)+1, lines, byteSize(len(text)))
	m.pastes[ph] = text
	m.input.InsertString(ph)
}

// expandPastes replaces paste placeholders in text with what was pasted.
func (m *Model) expandPastes(text string) string {
	for ph, content := range m.pastes {
		text = strings.ReplaceAll(text, ph, content)
	}
	return text
}

func byteSize(n int) string {
	if n >= 1024 {
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%d B", n)
}
