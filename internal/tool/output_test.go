package tool

import "testing"

// Escape sequences reported from real tool output: SGR colours whose ESC
// byte was lost on the way ("[32mok[0m", "?[32m" where a pipe replaced ESC
// with "?"), and an OSC colour query with no BEL/ST that leaked its
// payload to the model.
func TestCleanOutputStripsBrokenEscapes(t *testing.T) {
	cases := []struct{ in, want string }{
		{"[32mok[0m", "ok"},
		{"?[32mPASS?[0m tests", "PASS tests"},
		{"[1;31merror[0m: x", "error: x"},
		{"\x1b]11;rgb:0000/0000/0000\nnext line", "\nnext line"},
		{"\x1b]0;title\x07text", "text"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"arr[0] = x[i]; [m] [see 1]", "arr[0] = x[i]; [m] [see 1]"},
	}
	for _, c := range cases {
		if got := cleanOutput([]byte(c.in), nil); got != c.want {
			t.Errorf("cleanOutput(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
