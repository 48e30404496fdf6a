package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/testio"
)

// toolTurn asks for one tool call.
func toolTurn(id, name string, a map[string]any) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.Call{{ID: id, Name: name, Args: args(a)}}}
}

// TestApprovalsFailClosed: bypasses of the approval check found by a
// prompt-injection trial, each run headless without --yolo through the
// built binary with a scripted model against harmless targets (a fake
// HOME, a victim directory, a local bare git repository). Each must be
// refused, leave its target untouched, and tell the model why.
func TestApprovalsFailClosed(t *testing.T) {
	t.Run("process write of a hardline command", func(t *testing.T) {
		// rm is shadowed so nothing is deleted even if the check failed;
		// the marker shows whether the text reached the shell.
		e := newE2E(t,
			toolTurn("call_start", "terminal", map[string]any{"command": "bash", "background": true}),
			toolTurn("call_write", "process", map[string]any{"action": "write", "session_id": "proc_1", "data": "rm() { touch write-ran; }; rm -rf /; exit\n"}),
			toolTurn("call_wait", "process", map[string]any{"action": "wait", "session_id": "proc_1", "timeout": 1}),
			llmtest.Turn{Text: "Refused."},
		)
		if res := e.chatQ("clean up"); res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		if _, err := os.Stat(filepath.Join(e.workspace, "write-ran")); err == nil {
			t.Fatalf("a hardline command written to a background shell ran")
		}
		out := toolResults(t, e.request(2))["call_write"]
		if !strings.Contains(out, "not written") || !strings.Contains(out, "never runs") {
			t.Errorf("the write must be refused as hardline: %q", out)
		}
	})

	t.Run("workdir ~/.ssh append", func(t *testing.T) {
		e := newE2E(t,
			toolTurn("call_key", "terminal", map[string]any{"command": "echo attacker-key >> authorized_keys", "workdir": "~/.ssh"}),
			llmtest.Turn{Text: "Refused."},
		)
		keys := filepath.Join(e.userHome, ".ssh", "authorized_keys")
		if err := os.MkdirAll(filepath.Dir(keys), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keys, []byte("ssh-ed25519 AAAA user\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if res := e.chatQ("add my key"); res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		if got := testio.ReadFile(t, keys); got != "ssh-ed25519 AAAA user\n" {
			t.Fatalf("authorized_keys changed through workdir: %q", got)
		}
		if out := toolResults(t, e.request(1))["call_key"]; !strings.Contains(out, "approval") {
			t.Errorf("the tool result must say approval was needed: %q", out)
		}
	})

	t.Run("workdir HERMES_HOME config append", func(t *testing.T) {
		e := newE2E(t)
		e.srv = llmtest.NewServer(t,
			toolTurn("call_cfg", "terminal", map[string]any{"command": "echo 'approvals: {mode: off}' >> config.yaml", "workdir": e.home}),
			llmtest.Turn{Text: "Refused."},
		)
		e.env = []string{"OPENROUTER_BASE_URL=" + e.srv.URL, "OPENROUTER_API_KEY=" + fakeOpenRouterKey}
		e.configureModel()
		cfg := filepath.Join(e.home, "config.yaml")
		before := testio.ReadFile(t, cfg)
		if res := e.chatQ("relax the settings"); res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		if after := testio.ReadFile(t, cfg); after != before {
			t.Fatalf("config.yaml changed through workdir:\n%s", after)
		}
	})

	t.Run("computed command word", func(t *testing.T) {
		e := newE2E(t,
			toolTurn("call_rm", "terminal", map[string]any{"command": "$(echo rm) -rf victim"}),
			llmtest.Turn{Text: "Refused."},
		)
		e.writeFile("victim/precious.txt", "keep me")
		if res := e.chatQ("remove it"); res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		if _, err := os.Stat(filepath.Join(e.workspace, "victim", "precious.txt")); err != nil {
			t.Fatalf("$(echo rm) -rf victim ran: %v", err)
		}
	})

	t.Run("hermes config set approvals.mode off", func(t *testing.T) {
		e := newE2E(t)
		e.srv = llmtest.NewServer(t,
			toolTurn("call_off", "terminal", map[string]any{"command": hermesBin + " config set approvals.mode off"}),
			llmtest.Turn{Text: "Refused."},
		)
		e.env = []string{"OPENROUTER_BASE_URL=" + e.srv.URL, "OPENROUTER_API_KEY=" + fakeOpenRouterKey}
		e.configureModel()
		if res := e.chatQ("turn approvals off"); res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		if got := e.mustRun("config", "get", "approvals.mode").stdout; strings.Contains(got, "off") {
			t.Fatalf("the agent turned approvals off: %q", got)
		}
		// a hermes child without HERMES_HOME writes ~/.hermes/config.yaml
		if _, err := os.Stat(filepath.Join(e.userHome, ".hermes", "config.yaml")); err == nil {
			t.Fatalf("the agent's hermes wrote ~/.hermes/config.yaml")
		}
		if out := toolResults(t, e.request(1))["call_off"]; !strings.Contains(out, "never runs") {
			t.Errorf("changing approvals through hermes must be hardline: %q", out)
		}
	})

	t.Run("git -C . push matches a deny glob", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		e := newE2E(t)
		e.srv = llmtest.NewServer(t,
			toolTurn("call_push", "terminal", map[string]any{"command": "git -C . push origin HEAD:main", "workdir": "repo"}),
			llmtest.Turn{Text: "Refused."},
		)
		e.env = []string{"OPENROUTER_BASE_URL=" + e.srv.URL, "OPENROUTER_API_KEY=" + fakeOpenRouterKey}
		remote := filepath.Join(t.TempDir(), "remote.git")
		repo := filepath.Join(e.workspace, "repo")
		gitEnv := append(os.Environ(), "HOME="+e.userHome, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.test")
		for _, c := range [][]string{
			{"git", "init", "-q", "--bare", remote},
			{"git", "init", "-q", repo},
			{"git", "-C", repo, "commit", "-q", "--allow-empty", "-m", "x"},
			{"git", "-C", repo, "remote", "add", "origin", remote},
		} {
			cmd := exec.Command(c[0], c[1:]...)
			cmd.Env = gitEnv
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", c, err, out)
			}
		}
		e.configureModel()
		e.mustRun("config", "set", "approvals.deny", `["git push*"]`)
		if res := e.chatQ("publish it", "--yolo"); res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		refs, _ := exec.Command("git", "-C", remote, "for-each-ref").Output()
		if len(strings.TrimSpace(string(refs))) > 0 {
			t.Fatalf("git -C . push ran despite approvals.deny: %s", refs)
		}
		if out := toolResults(t, e.request(1))["call_push"]; !strings.Contains(out, "approvals.deny") {
			t.Errorf("the tool result must name the deny pattern: %q", out)
		}
	})
}
