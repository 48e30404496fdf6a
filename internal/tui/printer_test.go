package tui

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// bigParagraph is one paragraph of about size bytes of words.
func bigParagraph(size int) string {
	words := strings.Fields("lorem ipsum **dolor** sit amet consectetur adipiscing elit sed do eiusmod tempor")
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(words[i%len(words)] + " ")
	}
	return b.String()
}

// insertAbove matches bubbletea's print above the live region: the
// cursor moved up by the printed rows plus the live region's height less
// one, then that many lines inserted.
var insertAbove = regexp.MustCompile(`\x1b\[(\d*)A\x1b\[(\d*)L`)

// requirePrintsFit fails unless every block the program printed above its
// live region fitted on the screen together with the live region (a
// taller block left the renderer drawing the live region's changes at
// wrong places: only the clock's digits and typed keys were seen).
func requirePrintsFit(t *testing.T, raw string, height int) {
	t.Helper()
	n := 0
	for _, m := range insertAbove.FindAllStringSubmatch(raw, -1) {
		n++
		up, _ := strconv.Atoi(m[1])
		rows, _ := strconv.Atoi(m[2])
		if m[1] == "" {
			up = 1
		}
		if m[2] == "" {
			rows = 1
		}
		if live := up - rows + 1; rows+live > height {
			t.Errorf("a print of %d rows above a live region of %d rows does not fit in %d rows %q", rows, live, height, m[0])
		}
	}
	if n == 0 {
		t.Fatalf("no print above the live region was seen")
	}
}

// TestBigAnswerPrintsFit: an answer whose last paragraph is ~105 KB (930
// rows at 120 columns) is printed in chunks that fit above the live
// region, which itself never takes the whole screen; the whole paragraph
// is printed, in order.
func TestBigAnswerPrintsFit(t *testing.T) {
	text := "# Big answer\n\n" + bigParagraph(105<<10) + "THE-END\n"
	w := newWorld(t, llmtest.Turn{Text: text, ChunkSize: 4096, Usage: llmUsage(1000, 27000)})
	tm, out := start(t, w.options(t), 120, 40)
	send(tm, "big")
	waitFrame(t, tm, "↓27.0k") // the turn has ended
	send(tm, "/usage")         // printed after the answer: once it shows, the answer is printed
	out.wait(t, "api calls")
	requirePrintsFit(t, out.buf.String(), 40)
	s := out.String()
	if i, j := strings.Index(s, "# Big answer"), strings.LastIndex(s, "THE-END"); i < 0 || j < i { // the first THE-END can be the live region's
		t.Errorf("the heading and the end of the paragraph are not printed in order")
	}
}

// TestHelpInShortPanePrintsFit: /help (20 rows) in a 14-row pane is
// printed in chunks that fit above the editor and the status bar.
func TestHelpInShortPanePrintsFit(t *testing.T) {
	w := newWorld(t)
	tm, out := start(t, w.options(t), 100, 14)
	send(tm, "/help")
	out.wait(t, "input quits")
	requirePrintsFit(t, out.buf.String(), 14)
}

// TestBannerWrappedAtWidth: at 60 columns the banner is wrapped between
// words at the terminal's width (it was printed before the width was
// known, and the terminal cut it mid-word).
func TestBannerWrappedAtWidth(t *testing.T) {
	w := newWorld(t)
	_, out := start(t, w.options(t), 60, 20)
	out.wait(t, "Ctrl-D quits")
	s := out.String()
	banner := s[strings.Index(s, "Hermes Agent"):]
	banner = banner[:strings.Index(banner, "Ctrl-D quits")+len("Ctrl-D quits")]
	for _, l := range strings.Split(banner, "\n") {
		l = strings.TrimRight(l, " \r")
		if ansi.StringWidth(l) >= 60 {
			t.Errorf("a banner line is %d columns wide in a 60-column terminal: %q", ansi.StringWidth(l), l)
		}
	}
	words := strings.Fields(banner)
	for _, want := range []string{"session", w.sess.ID(), "Alt-Enter/Ctrl-J", "interrupts"} {
		if !slices.Contains(words, want) {
			t.Errorf("the banner lacks the whole word %q (cut at the edge?):\n%s", want, banner)
		}
	}
}
