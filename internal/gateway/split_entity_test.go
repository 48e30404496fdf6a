package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/gateway/telegramtest"
)

// markup is one platform's inline markup for the split tests, with a
// checker of a piece written independently of the splitter.
type markup struct {
	name                             string
	bold, italic, code, link, strike string
	check                            func(piece string) error
}

// evenOutsideCode checks that each marker occurs an even number of times
// outside inline code (a cut entity leaves one unpaired).
func evenOutsideCode(piece string, markers ...string) error {
	var outside strings.Builder
	for i, seg := range strings.Split(piece, "`") {
		if i%2 == 0 {
			outside.WriteString(seg)
		}
	}
	if strings.Count(piece, "`")%2 != 0 {
		return fmt.Errorf("unpaired `")
	}
	rest := outside.String()
	for _, m := range markers {
		if strings.Count(rest, m)%2 != 0 {
			return fmt.Errorf("unpaired %s", m)
		}
		rest = strings.ReplaceAll(rest, m, "")
	}
	return nil
}

// wholeLinks checks that every [text](url) is complete.
func wholeLinks(piece string) error {
	if i := strings.LastIndex(piece, "\n("); i >= 0 {
		piece = piece[:i] // the "(i/N)" suffix
	}
	if strings.Count(piece, "[") != strings.Count(piece, "](") || strings.Count(piece, "](") != strings.Count(piece, ")") {
		return fmt.Errorf("a link is cut")
	}
	return nil
}

var markups = []markup{
	{name: "telegram (legacy Markdown)", bold: "*%s*", italic: "_%s_", code: "`%s`", link: "[%s](https://example.com/docs/page)",
		check: telegramtest.ParseMarkdown},
	{name: "discord", bold: "**%s**", italic: "*%s*", code: "`%s`", link: "[%s](https://example.com/docs/page)", strike: "~~%s~~",
		check: func(p string) error {
			if err := evenOutsideCode(p, "**", "*", "~~"); err != nil {
				return err
			}
			return wholeLinks(p)
		}},
	{name: "slack (mrkdwn)", bold: "*%s*", italic: "_%s_", code: "`%s`", link: "<https://example.com/docs/page|%s>", strike: "~%s~",
		check: func(p string) error {
			if strings.Count(p, "<") != strings.Count(p, ">") {
				return fmt.Errorf("a link is cut")
			}
			return evenOutsideCode(p, "*", "_", "~")
		}},
}

// entityLine is one long line of prose with every entity of mk, shifted
// by pad characters so cuts fall at every place relative to them.
func entityLine(mk markup, pad int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("x", pad))
	for i := 0; b.Len() < 700; i++ {
		fmt.Fprintf(&b, " see "+mk.link+" then "+mk.bold+" and "+mk.italic+" and "+mk.code,
			"the docs", "bold words here", "slanted words", "go test ./...")
		if mk.strike != "" {
			fmt.Fprintf(&b, " "+mk.strike, "struck out")
		}
	}
	return b.String()
}

// A reply split at the platform limit is never cut inside an entity: each
// piece parses on its own (issue 24: `[the docs](htt` | `ps://…)` made
// Telegram refuse both pieces, resent as plain text).
func TestSplitNeverCutsInsideAnEntity(t *testing.T) {
	for _, mk := range markups {
		for pad := range 80 {
			text := "Intro line.\n" + entityLine(mk, pad) + "\n" + entityLine(mk, pad+1) + "\nThe end."
			if err := mk.check(text); err != nil {
				t.Fatalf("%s: the whole text does not parse: %v", mk.name, err)
			}
			for i, p := range SplitMessage(text, 200) {
				if utf16Len(p) > 200 {
					t.Fatalf("%s pad %d: piece %d is %d units", mk.name, pad, i+1, utf16Len(p))
				}
				if err := mk.check(p); err != nil {
					t.Fatalf("%s pad %d: piece %d does not parse (%v):\n%s", mk.name, pad, i+1, err, p)
				}
			}
		}
	}
}

// An entity longer than a part is closed at the cut and reopened in the
// next part, so both keep their formatting.
func TestSplitClosesAndReopensALongEntity(t *testing.T) {
	long := strings.Repeat("word ", 100)
	for _, mk := range markups {
		text := "before " + fmt.Sprintf(mk.bold, strings.TrimSpace(long)) + " after"
		parts := SplitMessage(text, 200)
		if len(parts) < 3 {
			t.Fatalf("%s: %d parts", mk.name, len(parts))
		}
		open := mk.bold[:strings.Index(mk.bold, "%s")]
		for i, p := range parts {
			if err := mk.check(p); err != nil {
				t.Fatalf("%s: piece %d does not parse (%v):\n%s", mk.name, i+1, err, p)
			}
			if i > 0 && i < len(parts)-1 && !strings.HasPrefix(p, open) {
				t.Fatalf("%s: piece %d does not reopen the bold text:\n%s", mk.name, i+1, p)
			}
		}
	}
}
