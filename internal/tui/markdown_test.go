package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// sampleMarkdown is an answer as models write them.
const sampleMarkdown = "# Plan\n\nRead the *config*, fix **the `Load` bug** and ~~guess~~ test it; see [the docs](https://example.com/docs).\n\n" +
	"## Steps\n\n1. Open `config.go`\n2. Change the loader:\n   - keep the defaults\n   - report the key at fault\n\n" +
	"> Note: run the tests **twice**.\n\n" +
	"```go\nfunc Load(path string) (*Config, error) {\n\tb, err := os.ReadFile(path) // whole file\n\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"config %s: %w\", path, err)\n\t}\n\treturn parse(b, 0x10)\n}\n```\n\n" +
	"| file | lines | state |\n|:-----|------:|:-----:|\n| config.go | 120 | ok |\n| load.go | 7 | **fixed** |\n\n---\n\nDone.\n"

// TestMarkdownGolden: the rendering of a typical answer at 60 columns,
// ANSI sequences kept (`cat` the golden file in a terminal to see it).
func TestMarkdownGolden(t *testing.T) {
	golden.RequireEqual(t, newMarkdown().render(sampleMarkdown, 60))
}

// plain renders src at width with the ANSI sequences stripped.
func plain(t *testing.T, src string, width int) (string, string) {
	t.Helper()
	out := newMarkdown().render(src, width)
	return out, ansi.Strip(out)
}

func TestMarkdownStructure(t *testing.T) {
	raw, got := plain(t, sampleMarkdown, 60)
	for _, want := range []string{
		"# Plan\n",
		"## Steps\n",
		"Read the config, fix the Load bug and guess test it; see the\ndocs (https://example.com/docs).", // link text then URL
		"1. Open config.go\n2. Change the loader:\n   • keep the defaults\n   • report the key at fault\n",
		"▎ Note: run the tests twice.",
		"╭ go\n│ func Load(path string) (*Config, error) {\n│     b, err := os.ReadFile(path) // whole file\n",
		"\n" + strings.Repeat("─", 60) + "\n\nDone.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendering lacks %q:\n%s", want, got)
		}
	}
	md := newMarkdown()
	for _, want := range []string{
		md.sgrOf(styleBold) + "the ",                       // strong
		md.sgrOf(styleItalic) + "config",                   // emphasis
		md.sgrOf(styleBold|styleCode) + "Load",             // code inside strong
		md.sgrOf(styleStrike) + "guess",                    // strikethrough
		md.sgrOf(styleLink) + "the",                        // link text
		md.sgrOf(styleDim) + " (https://example.com/docs)", // URL dimmed
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("rendering lacks the styled %q:\n%q", ansi.Strip(want), raw)
		}
	}
}

// TestMarkdownCodeHighlighted: fenced code gets keyword, string, number,
// comment and function colours per language; unknown languages stay plain.
func TestMarkdownCodeHighlighted(t *testing.T) {
	h := newHighlighter()
	cases := []struct {
		lang, code string
		want       map[string]tokenKind
	}{
		{"go", "func main() {\n\tx := 42 // answer\n\tfmt.Println(\"hi\")\n}", map[string]tokenKind{"func": tokKeyword, "42": tokNumber, "// answer": tokComment, `"hi"`: tokString, "Println": tokFunc}},
		{"python", "def f(x):\n    \"\"\"Doc.\"\"\"\n    return None  # done", map[string]tokenKind{"def": tokKeyword, `"""Doc."""`: tokString, "None": tokType, "# done": tokComment}},
		{"ts", "const n: number = 3;\nlet s = `a ${n}`; /* c */", map[string]tokenKind{"const": tokKeyword, "number": tokType, "`a ${n}`": tokString, "/* c */": tokComment}},
		{"bash", "if [ -f \"$F\" ]; then\n  echo $HOME # home\nfi", map[string]tokenKind{"if": tokKeyword, "fi": tokKeyword, `"$F"`: tokString, "$HOME": tokVar, "# home": tokComment}},
		{"json", "{\"name\": \"x\", \"n\": 1.5, \"ok\": true}", map[string]tokenKind{`"name"`: tokVar, `"x"`: tokString, "1.5": tokNumber, "true": tokType}},
		{"yaml", "model:\n  default: gpt-5 # pick\n  retries: 3\n  - name: x", map[string]tokenKind{"model": tokVar, "default": tokVar, "# pick": tokComment, "3": tokNumber, "name": tokVar}},
		{"rust", "fn f<'a>(s: &'a str) -> char { 'x' }", map[string]tokenKind{"fn": tokKeyword, "str": tokType, "'x'": tokString}},
		{"c", "#include <stdio.h>\nint main(void) { return 0; } // c", map[string]tokenKind{"int": tokType, "return": tokKeyword, "0": tokNumber, "// c": tokComment}},
		{"diff", "@@ -1 +1 @@\n-old\n+new", map[string]tokenKind{"@@ -1 +1 @@": tokHunk, "-old": tokRemoved, "+new": tokAdded}},
	}
	for _, c := range cases {
		out := h.highlight(c.code, c.lang)
		if ansi.Strip(out) != c.code {
			t.Errorf("%s: highlighting changed the text:\n%q", c.lang, ansi.Strip(out))
		}
		for tok, kind := range c.want {
			if !strings.Contains(out, h.sgr[kind]+tok+ansi.ResetStyle) {
				t.Errorf("%s: %q is not coloured as %d:\n%q", c.lang, tok, kind, out)
			}
		}
	}
	// A Rust lifetime is not a string.
	if out := h.highlight("fn f<'a>(s: &'a str)", "rust"); strings.Contains(out, h.sgr[tokString]) {
		t.Errorf("a lifetime was coloured as a string: %q", out)
	}
	if out := h.highlight("func main() {}", "brainfuck"); out != "func main() {}" {
		t.Errorf("an unknown language was coloured: %q", out)
	}
	// Through the renderer: the block's lines carry the colours.
	raw, _ := plain(t, "```go\nfunc main() {}\n```", 40)
	if !strings.Contains(raw, h.sgr[tokKeyword]+"func"+ansi.ResetStyle) {
		t.Errorf("a fenced Go block was not highlighted: %q", raw)
	}
}

// TestMarkdownMultilineTokens: a block comment over several lines is
// coloured on each line (each line stands alone behind its gutter).
func TestMarkdownMultilineTokens(t *testing.T) {
	raw, _ := plain(t, "```c\n/* one\n   two */\nint x;\n```", 40)
	lines := strings.Split(raw, "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], "\x1b[0;38;5;244;3m   two */") {
		t.Errorf("the comment's second line lost its colour:\n%q", raw)
	}
}

// TestMarkdownTable: columns aligned as the delimiter row says; a table
// wider than the terminal is fitted by wrapping its widest cells.
func TestMarkdownTable(t *testing.T) {
	src := "| name | size | kind |\n|:--|--:|:-:|\n| a | 1 | file |\n| bbbbbbb | 12345 | dir |\n"
	_, got := plain(t, src, 60)
	want := "name    │  size │ kind\n" +
		"────────┼───────┼─────\n" +
		"a       │     1 │ file\n" +
		"bbbbbbb │ 12345 │ dir"
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	wide := "| key | description |\n|---|---|\n| model.default | the model every new session starts with unless --model is given |\n"
	_, got = plain(t, wide, 40)
	for _, l := range strings.Split(got, "\n") {
		if w := ansi.StringWidth(l); w > 40 {
			t.Errorf("line of %d columns in a 40-column table: %q", w, l)
		}
	}
	if !strings.Contains(got, "model.default │ the model every new") || !strings.Contains(got, "              │ ") {
		t.Errorf("the long cell was not wrapped under its column:\n%s", got)
	}
	// A paragraph line before the header stays a paragraph.
	_, got = plain(t, "Sizes:\n| a | b |\n|---|---|\n| 1 | 2 |\n", 40)
	if !strings.HasPrefix(got, "Sizes:\n\na │ b\n") {
		t.Errorf("paragraph + table:\n%s", got)
	}
}

// TestMarkdownWrap: paragraphs, list items and quotes are word-wrapped
// at the width (ANSI aware), with list text aligned under its marker and
// styles carried onto the next line.
func TestMarkdownWrap(t *testing.T) {
	long := strings.Repeat("word ", 30)
	src := long + "\n\n- " + long + "\n\n> " + long + "\n\n**" + strings.TrimSpace(long) + "**\n"
	raw, got := plain(t, src, 30)
	for _, l := range strings.Split(got, "\n") {
		if w := ansi.StringWidth(l); w > 30 {
			t.Errorf("line of %d columns at width 30: %q", w, l)
		}
	}
	if !strings.Contains(got, "• word word") || !strings.Contains(got, "\n  word word") {
		t.Errorf("list item continuation is not indented under the text:\n%s", got)
	}
	if !strings.Contains(got, "\n▎ word word") {
		t.Errorf("quote continuation lacks the bar:\n%s", got)
	}
	md := newMarkdown()
	bold := 0
	for _, l := range strings.Split(raw, "\n") {
		if strings.HasPrefix(l, md.sgrOf(styleBold)) && strings.HasSuffix(l, ansi.ResetStyle) {
			bold++
		}
	}
	if bold < 5 {
		t.Errorf("wrapped bold text: %d lines start bold and end reset, want every one of its lines:\n%q", bold, raw)
	}
	// A word longer than the width is broken rather than overflowing.
	_, got = plain(t, strings.Repeat("x", 50), 20)
	if got != strings.Repeat("x", 20)+"\n"+strings.Repeat("x", 20)+"\n"+strings.Repeat("x", 10) {
		t.Errorf("long word:\n%s", got)
	}
}

// TestMarkdownUnclosedFence: mid-stream, a code block whose fence is not
// closed yet renders as (highlighted) code, not as a paragraph.
func TestMarkdownUnclosedFence(t *testing.T) {
	raw, got := plain(t, "Here:\n\n```python\ndef f():\n    return 1", 40)
	if got != "Here:\n\n╭ python\n│ def f():\n│     return 1" {
		t.Errorf("unclosed fence:\n%s", got)
	}
	h := newHighlighter()
	if !strings.Contains(raw, h.sgr[tokKeyword]+"def") {
		t.Errorf("the unclosed block is not highlighted: %q", raw)
	}
	// An unclosed string or comment is coloured to the end, not lost.
	out := h.highlight("x = \"abc", "python")
	if ansi.Strip(out) != "x = \"abc" || !strings.Contains(out, h.sgr[tokString]+"\"abc") {
		t.Errorf("unclosed string: %q", out)
	}
	// Unclosed emphasis stays literal.
	if _, got := plain(t, "some **bold", 40); got != "some **bold" {
		t.Errorf("unclosed emphasis: %q", got)
	}
}

// TestMarkdownListNumbers: ordered lists keep their start number and
// right-align the markers; nested bullets change shape.
func TestMarkdownListNumbers(t *testing.T) {
	var src strings.Builder
	for i := range 10 {
		src.WriteString("1. item\n")
		if i == 0 {
			src.WriteString("   - a\n     - b\n")
		}
	}
	_, got := plain(t, src.String(), 40)
	if !strings.HasPrefix(got, " 1. item\n    • a\n      ◦ b\n 2. item\n") || !strings.HasSuffix(got, "\n10. item") {
		t.Errorf("ordered list:\n%s", got)
	}
	_, got = plain(t, "7) seven\n8) eight", 40)
	if got != "7) seven\n8) eight" {
		t.Errorf("start number and ) marker: %q", got)
	}
}

// TestMarkdownEscapesAndEntities: backslash escapes and entities show
// as the characters they stand for; code keeps them as written.
func TestMarkdownEscapesAndEntities(t *testing.T) {
	_, got := plain(t, "a \\*literal\\* &amp; &#65; `\\*raw\\*`", 40)
	if got != "a *literal* & A \\*raw\\*" {
		t.Errorf("escapes: %q", got)
	}
}

// BenchmarkMarkdown renders a 16 KB answer (the live region's limit) at
// 100 columns, as the streamed paragraph is rendered at most every 50 ms.
//
// Run: go test ./internal/tui -run '^$' -bench Markdown
func BenchmarkMarkdown(b *testing.B) {
	var src strings.Builder
	for src.Len() < 16<<10 {
		src.WriteString(sampleMarkdown + "\n")
	}
	md := newMarkdown()
	b.SetBytes(int64(src.Len()))
	for b.Loop() {
		md.render(src.String(), 100)
	}
}

// TestStreamFences: the streaming view's fence tracking agrees with the
// parser: a ~~~ line inside a ``` block does not close it, a closing
// fence is as long as the opening one and has no info string, and an
// indented fence (in a nested list item) counts.
func TestStreamFences(t *testing.T) {
	if got := openFence("text\n```md\n~~~\nstill code"); got != "```md\n" {
		t.Errorf("openFence = %q, want the ``` block still open", got)
	}
	if got := openFence("````go\ncode\n```\n"); got != "````go\n" {
		t.Errorf("a shorter fence closed a longer one: %q", got)
	}
	if got := openFence("- a\n    - b\n      ```sh\n      ls\n"); got != "```sh\n" {
		t.Errorf("indented fence: %q", got)
	}
	if got := closingFence("````go\n"); got != "````" {
		t.Errorf("closingFence = %q", got)
	}
	text := "```\n~~~\n\nin code\n```\nafter\n\nnext"
	if got := paragraphCut("", text); got != len(text)-len("next") {
		t.Errorf("paragraphCut = %d, want after the blank line following the block (%d)", got, len(text)-len("next"))
	}
}
