package approval

import (
	"strings"
	"testing"
)

// The approval line shows an escape sequence in a command, as text: a
// model's command "rm -rf ~ ESC[2K CR ls" otherwise shows only "ls" on a
// terminal, and an MCP server's tool name could hide what it calls.
func TestPromptWhatShowsControls(t *testing.T) {
	for _, p := range []Prompt{
		{Command: "rm -rf ~ \x1b[2K\rls -la"},
		{Tool: "mcp__evil__x", Action: "call x\x1b[8m on untrusted MCP server evil", Path: `{}`},
		{Command: "echo \u202ehello\u009b2K"},
	} {
		got := p.What()
		for _, c := range []string{"\x1b", "\r", "\u202e", "\u009b"} {
			if strings.Contains(got, c) {
				t.Errorf("What() = %q holds the control %q", got, c)
			}
		}
		if !strings.Contains(got, `\x1b`) && !strings.Contains(got, `\u202e`) {
			t.Errorf("What() = %q does not show the escape", got)
		}
	}
	if got := (Prompt{Command: "ls -la\n\tpwd"}).What(); got != "ls -la\n\tpwd" {
		t.Errorf("plain command changed: %q", got)
	}
}
