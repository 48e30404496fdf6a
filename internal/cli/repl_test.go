package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestREPLPrintsResumeHint: the plain line chat (`hermes --cli`) ends, as
// the TUI and Hermes do, with how to resume the conversation (it printed
// nothing), and prints no hint for a session without messages.
func TestREPLPrintsResumeHint(t *testing.T) {
	app, out, errOut, home := skillsTestApp(t, "hello\n")
	app.IsTerminal = true
	replay := filepath.Join(home, "model.jsonl")
	if err := os.WriteFile(replay, []byte(`{"text": "hi there"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"chat", "--cli", "--ignore-user-config", "--provider", "replay", "--replay", replay}
	if code := app.Run(context.Background(), args); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	hint := regexp.MustCompile(`Resume this session with: hermes --resume (\S+)\n$`).FindStringSubmatch(out.String())
	if hint == nil {
		t.Fatalf("no resume hint at the end of the chat:\n%s", out)
	}
	if code := app.Run(context.Background(), []string{"sessions", "list"}); code != 0 || !regexp.MustCompile(regexp.QuoteMeta(hint[1])).MatchString(out.String()) {
		t.Errorf("the hinted session %s is not listed:\n%s", hint[1], out)
	}

	empty, out2, errOut2, _ := skillsTestApp(t, "")
	empty.IsTerminal = true
	if code := empty.Run(context.Background(), args); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out2, errOut2)
	}
	if regexp.MustCompile("Resume this session").MatchString(out2.String()) {
		t.Errorf("a chat without messages printed a resume hint:\n%s", out2)
	}
}
