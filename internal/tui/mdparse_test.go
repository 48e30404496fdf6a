package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// inlineShape renders inline markdown as a bracketed tree: *em*, **strong**,
// ~~strike~~, `code`, [link](dest), <autolink>, {html}, / for a break.
func inlineShape(nodes []*inl) string {
	var b strings.Builder
	for _, n := range nodes {
		switch n.kind {
		case inlText:
			b.WriteString(n.text)
		case inlCode:
			b.WriteString("`" + n.text + "`")
		case inlEmph:
			b.WriteString("*" + inlineShape(n.children) + "*")
		case inlStrong:
			b.WriteString("**" + inlineShape(n.children) + "**")
		case inlStrike:
			b.WriteString("~~" + inlineShape(n.children) + "~~")
		case inlLink:
			b.WriteString("[" + inlineShape(n.children) + "](" + n.text + ")")
		case inlImage:
			b.WriteString("![" + inlineShape(n.children) + "](" + n.text + ")")
		case inlAutolink:
			b.WriteString("<" + n.text + ">")
		case inlHTML:
			b.WriteString("{" + n.text + "}")
		case inlBreak:
			b.WriteString("/")
		}
	}
	return b.String()
}

// TestParseInline: CommonMark's emphasis rules (flanking, intraword _,
// the rule of 3), code spans, escapes, entities, links and autolinks.
func TestParseInline(t *testing.T) {
	cases := map[string]string{
		"*a* _b_ **c** __d__":             "*a* *b* **c** **d**",
		"***both***":                      "***both***",
		"*a **b** c*":                     "*a **b** c*",
		"snake_case_name and 2*3*4":       "snake_case_name and 2*3*4",
		"* not emphasis *":                "* not emphasis *",
		"**unclosed":                      "**unclosed",
		"*foo**bar**baz*":                 "*foo**bar**baz*",
		"~~gone~~ ~one~ ~~~three~~~":      "~~gone~~ ~~one~~ ~~~three~~~",
		"`a*b*c` and `` x ` y ``":         "`a*b*c` and `x ` y`",
		"`unclosed *em*":                  "`unclosed *em*",
		"\\*lit\\* \\_x\\_ a\\b":          "*lit* _x_ a\\b",
		"&amp; &lt; &#65; &#x42; &nope;":  "& < A B &nope;",
		"[text](http://a.b/c(d)) after":   "[text](http://a.b/c(d)) after",
		"[t](<a b> \"title\") [x] [y](":   "[t](a b) [x] [y](",
		"![alt *it*](img.png)":            "![alt *it*](img.png)",
		"[**b** `c`](u)":                  "[**b** `c`](u)",
		"<https://x.io/a> <me@x.io> <br>": "<https://x.io/a> <me@x.io> {<br>}",
		"a < b > c":                       "a < b > c",
		"line one  \nline two\\\nthree":   "line one/line two/three",
		"soft\n  break":                   "soft break",
		"- [ ] task":                      "- [ ] task",
	}
	for in, want := range cases {
		if got := inlineShape(parseInline(in)); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// TestParseBlocks: the block structure of documents models write.
func TestParseBlocks(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Title\n=====\n\nSub\n---\ntext", "# Title\n\n## Sub\n\ntext"},
		{"para\n\n    indented code\n    more\n\nafter", "para\n\n│ indented code\n│ more\n\nafter"},
		{"> quoted\nlazy line\n\n> second", "▎ quoted lazy line\n\n▎ second"},
		{"> ```\n> code\n> ```", "▎ │ code"},
		{"- a\n\n- b", "• a\n\n• b"},
		{"- a\n- b\n\n  more of b", "• a\n\n• b\n\n  more of b"},
		{"* x\n+ y", "• x\n\n• y"},
		{"- a\n---\n- b", "• a\n\n" + strings.Repeat("─", 20) + "\n\n• b"},
		{"1. one\n1. two\n1. three", "1. one\n2. two\n3. three"},
		{"text\n2. not a list", "text 2. not a list"},
		{"text\n- a list", "text\n\n• a list"},
		{"- item\n  ```sh\n  ls\n  ```\n- next", "• item\n  ╭ sh\n  │ ls\n• next"},
		{"## Closed ##\n#hashtag", "## Closed\n\n#hashtag"},
		{"***\n___\n- - -", strings.Repeat("─", 20) + "\n\n" + strings.Repeat("─", 20) + "\n\n" + strings.Repeat("─", 20)},
		{"<div>\n*x*\n</div>\n\npara", "<div>\n*x*\n</div>\n\npara"},
		{"| a | b |\n|---|---|\n| `x\\|y` | 2 |", "a   │ b\n────┼──\nx|y │ 2"},
		{"~~~\n```\n~~~", "│ ```"},
		{"\tcode with tab", "│ code with tab"},
	}
	for _, c := range cases {
		if got := ansi.Strip(newMarkdown().render(c.in, 20)); got != c.want {
			t.Errorf("%q:\ngot:\n%s\nwant:\n%s", c.in, got, c.want)
		}
	}
}

// FuzzMarkdown: any input renders without panicking, within the width.
func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{sampleMarkdown, "> - [a](b)\n>   ```\n", "|a|\n|-|\n|b|c|", "***a*b**c*", "1. x\n   > y\n\n   z", "`` ` ``", "[a](<b)", "\t-\t*\t_"} {
		f.Add(s, 30)
	}
	f.Fuzz(func(t *testing.T, src string, width int) {
		width = 10 + abs(width)%100
		for _, l := range strings.Split(newMarkdown().render(src, width), "\n") {
			if w := ansi.StringWidth(l); w > width && !strings.ContainsAny(src, "\x1b\r\v\f") {
				t.Fatalf("line of %d columns at width %d: %q", w, width, l)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
