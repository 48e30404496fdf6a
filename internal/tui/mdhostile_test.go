package tui

import (
	"runtime"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// hostileMarkdown are inputs a model can stream that made the parser
// super-linear (each 100 KB): quotes and lists nested thousands deep,
// long lazy continuations of a quote and of a list item, a paragraph
// of many lines and a run of '<' without '>'.
var hostileMarkdown = map[string]string{
	"deep quote":      strings.Repeat(">", 100<<10) + " x",
	"deep list":       strings.Repeat("- ", 50<<10) + "x",
	"lazy quote":      "> a\n" + strings.Repeat("b\n", 50<<10),
	"lazy list item":  "- a\n" + strings.Repeat("b\n", 50<<10),
	"paragraph lines": strings.Repeat("b\n", 50<<10),
	"angle brackets":  strings.Repeat("<a", 50<<10),
}

// nodeDepth is the deepest nesting of containers in nodes.
func nodeDepth(nodes []*mdNode) int {
	d := 0
	for _, n := range nodes {
		d = max(d, 1+nodeDepth(n.children))
	}
	return d
}

// TestMarkdownNestingBounded: quotes and lists nest at most maxNesting
// deep; deeper markers are text (">" ten thousand deep took seconds, a
// hundred thousand minutes, on the TUI's only goroutine).
func TestMarkdownNestingBounded(t *testing.T) {
	for _, src := range []string{strings.Repeat(">", 10000) + " x", strings.Repeat("- ", 5000) + "x", strings.Repeat("> - ", 3000) + "x"} {
		// quote/list → item → … : two levels per list.
		if d := nodeDepth(parseMarkdown(src)); d > 2*maxNesting+2 {
			t.Errorf("%q…: nested %d deep", src[:8], d)
		}
		if out := newMarkdown().render(src, 80); !strings.Contains(out, "x") {
			t.Errorf("%q…: the text is lost", src[:8])
		}
	}
	if got := stripped(newMarkdown().render("> > quoted", 40)); got != "▎ ▎ quoted" {
		t.Errorf("shallow nesting: %q", got)
	}
}

// TestMarkdownParagraphLinesNotCopied: a paragraph of many lines is not
// copied at each line end (50,000 lines allocated gigabytes).
func TestMarkdownParagraphLinesNotCopied(t *testing.T) {
	src := hostileMarkdown["paragraph lines"]
	md := newMarkdown()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_ = md.render(src, 80)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 200*uint64(len(src)) {
		t.Errorf("rendering %d bytes allocated %d MB", len(src), got>>20)
	}
}

// TestMarkdownAngleBrackets: autolinks and tags still parse as before
// the linear scan for '>'.
func TestMarkdownAngleBrackets(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		kind inlKind
	}{
		{"<https://x.dev> z", 15, inlAutolink}, {"<a@b.c>", 7, inlAutolink}, {"<b>t", 3, inlHTML},
		{"</b>", 4, inlHTML}, {"<a href=\"x\">", 12, inlHTML}, {"<a<b>", 0, 0}, {"<a", 0, 0}, {"<>", 0, 0}, {"< b>", 0, 0},
	}
	for _, c := range cases {
		if n, k := angleAt(c.in); n != c.n || n > 0 && k != c.kind {
			t.Errorf("angleAt(%q) = %d, %d; want %d, %d", c.in, n, k, c.n, c.kind)
		}
	}
}

func stripped(s string) string { return strings.TrimSpace(ansi.Strip(s)) }

// BenchmarkMarkdownHostile renders each hostile input once per op; all
// are linear now (before: deep quote minutes, lazy quote/list ~90 s,
// paragraph lines ~4 s, angle brackets ~1 s).
//
// Run: go test ./internal/tui -run '^$' -bench MarkdownHostile
func BenchmarkMarkdownHostile(b *testing.B) {
	for name, src := range hostileMarkdown {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			md := newMarkdown()
			b.SetBytes(int64(len(src)))
			for range b.N {
				_ = md.render(src, 80)
			}
		})
	}
}
