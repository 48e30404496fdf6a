package main_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// terminalTurn asks for one terminal command with call id id.
func terminalTurn(id, command string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.Call{{ID: id, Name: "terminal", Args: args(map[string]any{"command": command})}}}
}

// TestSecretsNeverStoredOrShownToModel: after runs with an API key in the
// environment, the key is in no file under HERMES_HOME (state.db and its
// WAL included), on neither output stream, and not in what a terminal
// command that dumps its environment (and hermes's) sends to the model.
func TestSecretsNeverStoredOrShownToModel(t *testing.T) {
	const secret = "SECRET123"
	e := newE2E(t,
		terminalTurn("call_env", `env; echo "key=[$OPENROUTER_API_KEY]"; tr '\0' '\n' < /proc/$PPID/environ`),
		llmtest.Turn{Text: "I looked at the environment."},
		terminalTurn("call_env2", "env | sort"),
		llmtest.Turn{Text: "Looked again."},
	)
	e.configureModel()
	first := e.mustRun("chat", "-Q", "--yolo", "-q", "show me the environment")
	second := e.mustRun("chat", "-Q", "--yolo", "-c", "-q", "once more, sorted")
	for _, res := range []result{first, second} {
		if strings.Contains(res.stdout+res.stderr, secret) {
			t.Errorf("the key reached the output streams\n%s", res)
		}
	}

	sawEnv := false
	for i, r := range e.srv.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer "+fakeOpenRouterKey {
			t.Errorf("request %d: Authorization = %q (the key must still authenticate)", i+1, got)
		}
		if bytes.Contains(r.Body, []byte(secret)) {
			t.Errorf("request %d body sent the key to the model: %s", i+1, r.Body)
		}
		sawEnv = sawEnv || bytes.Contains(r.Body, []byte("PATH="))
	}
	if !sawEnv {
		t.Fatalf("no request carried the env output; the test did not exercise the terminal tool")
	}

	files := 0
	err := filepath.WalkDir(e.home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s contains the API key", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.home, "state.db")); err != nil {
		t.Fatalf("no state.db after the runs (%d files scanned): %v", files, err)
	}
}

// TestHeadlessApprovals: without --yolo a dangerous command is denied at
// once and the model is told why; with --yolo it runs; a hardline command
// never runs, even with --yolo.
func TestHeadlessApprovals(t *testing.T) {
	buildDir := func(e *e2e) string {
		e.writeFile("build/artifact.o", "object code")
		return filepath.Join(e.workspace, "build")
	}

	t.Run("denied without yolo", func(t *testing.T) {
		e := newE2E(t, terminalTurn("call_rm", "rm -rf ./build"), llmtest.Turn{Text: "I was not allowed to clean the build."})
		dir := buildDir(e)
		res := e.chatQ("clean the build")
		if res.code != 0 || res.stdout != "I was not allowed to clean the build.\n" {
			t.Fatalf("want exit 0 and the final answer\n%s", res)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("rm -rf ./build ran without approval: %v", err)
		}
		out := toolResults(t, e.request(1))["call_rm"]
		if !strings.Contains(strings.ToLower(out), "approv") || !strings.Contains(out, "--yolo") {
			t.Errorf("the tool result must explain that approval was needed and how to allow it: %q", out)
		}
	})

	t.Run("runs with yolo", func(t *testing.T) {
		e := newE2E(t, terminalTurn("call_rm", "rm -rf ./build"), llmtest.Turn{Text: "Cleaned."})
		dir := buildDir(e)
		if res := e.chatQ("clean the build", "--yolo"); res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("rm -rf ./build did not run under --yolo: %v", err)
		}
	})

	t.Run("hardline never runs", func(t *testing.T) {
		// rm is shadowed by a shell function so that nothing is deleted even
		// if the hardline check failed; the marker file shows whether it ran.
		e := newE2E(t, terminalTurn("call_rm", "rm() { touch hardline-ran; }; rm -rf /"), llmtest.Turn{Text: "Refused."})
		res := e.chatQ("wipe the machine", "--yolo")
		if res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		if _, err := os.Stat(filepath.Join(e.workspace, "hardline-ran")); err == nil {
			t.Fatalf("a hardline command ran under --yolo")
		}
		out := toolResults(t, e.request(1))["call_rm"]
		if !strings.Contains(out, "never runs") {
			t.Errorf("the tool result must say the command is on the hardline list: %q", out)
		}
	})
}
