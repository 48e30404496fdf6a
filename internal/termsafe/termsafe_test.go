package termsafe

import "testing"

func TestStreamClean(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "hello\nworld\ttab", "hello\nworld\ttab"},
		{"osc 52 clipboard write", "ok \x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07done", "ok done"},
		{"osc with ST", "a\x1b]0;title\x1b\\b", "ab"},
		{"unterminated osc ends at line end", "a\x1b]11;rgb:0000/0000/0000\nnext", "a\nnext"},
		{"cursor movement and colours", "\x1b[2J\x1b[H\x1b[31mred\x1b[0m \x1b[1A", "red "},
		{"carriage return and backspace", "safe\rEVIL\b!", "safeEVIL!"},
		{"C1 CSI", "x\u009b2Jy", "xy"},
		{"unicode kept", "naïve — ✓ 日本", "naïve — ✓ 日本"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f Stream
			if got := f.Clean(c.in); got != c.want {
				t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
			}
			// The same text streamed one byte... one rune at a time.
			var g Stream
			out := ""
			for _, r := range c.in {
				out += g.Clean(string(r))
			}
			if out != c.want {
				t.Errorf("streamed rune by rune: %q, want %q", out, c.want)
			}
		})
	}
}

// TestBareSGRInModelText: colour sequences whose ESC was lost ("[32m…[0m"),
// as models copy them from tool output, are removed from text shown on a
// terminal, also when a sequence is split between streamed deltas;
// brackets that start no such sequence are kept.
func TestBareSGRInModelText(t *testing.T) {
	if got := Clean("[32mPASS[0m 12 tests, [1;31m0 failed[0m"); got != "PASS 12 tests, 0 failed" {
		t.Errorf("Clean = %q", got)
	}
	var f Stream
	var out string
	for _, piece := range []string{"ok [3", "2", "mgreen[", "0m done [", "1] and a[0] ", "[12;"} {
		out += f.Clean(piece)
	}
	out += f.Flush()
	if want := "ok green done [1] and a[0] [12;"; out != want {
		t.Errorf("streamed = %q, want %q", out, want)
	}
	for _, keep := range []string{"see [the docs](https://x)", "x[1]", "[]", "[", "[1234m", "items[10]m"} {
		if got := Clean(keep); got != keep {
			t.Errorf("Clean(%q) = %q, must be unchanged", keep, got)
		}
	}
}
