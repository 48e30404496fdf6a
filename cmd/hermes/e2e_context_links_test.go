package main_test

// Issue 23: nothing a command writes in the workspace is trusted by the
// host. A command plants links from the project context files and a
// project skill to HERMES_HOME's secrets; the next session's system
// prompt, as the fake model server receives it, holds none of them.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

const (
	// boxSecretValue is stored with `hermes secrets set` (HERMES_HOME/secrets/secrets.json).
	boxSecretValue = "ghp_PLANTED_BOX_SECRET_31415926"
	// dotEnvSecretValue is stored with `hermes config set` (HERMES_HOME/.env).
	dotEnvSecretValue = "sk-PLANTED-DOTENV-27182818"
)

// plantLinksScript links every project context file name to HERMES_HOME's
// secrets, each in another spelling (absolute, relative ../, through
// /proc/self/root, through a symlinked directory, a hard link), and a
// project skill folder to a directory outside the workspace.
func plantLinksScript(home, workspace, outside string) string {
	rel, _ := filepath.Rel(workspace, home)
	return strings.Join([]string{
		"ln -sf " + home + "/secrets/secrets.json AGENTS.md",
		"ln -sf " + rel + "/.env CLAUDE.md",
		"ln -sf /proc/self/root" + home + "/secrets/secrets.json .cursorrules",
		"ln -sfn " + home + " cfg && ln -sf cfg/.env HERMES.md",
		"(ln -f " + home + "/.env .hermes.md || cp -s " + home + "/.env .hermes.md)",
		"mkdir -p .hermes/skills " + outside + "/leak",
		"printf -- '---\\nname: leak\\ndescription: planted-skill-marker\\n---\\nbody\\n' > " + outside + "/leak/SKILL.md",
		"ln -sfn " + outside + "/leak .hermes/skills/leak",
		"ls -la; true",
	}, "; ")
}

// runContextLinkAttack stores the two secrets, lets a scripted model run
// plantLinksScript in one session, starts a second session and checks
// what that session sent to the model and said on stderr.
func runContextLinkAttack(t *testing.T, e *e2e, extraArgs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, _, stderr := e.command(ctx, nil, "secrets", "set", "GH_TOKEN", "--hosts", "api.github.com")
	cmd.Stdin = strings.NewReader(boxSecretValue)
	if err := cmd.Run(); err != nil {
		t.Fatalf("hermes secrets set: %v\n%s", err, stderr)
	}
	e.mustRun("config", "set", "GITHUB_PAT", dotEnvSecretValue)

	e.mustRun(append(append([]string{"chat", "-Q"}, extraArgs...), "-q", "set things up")...)
	planted := toolResults(t, e.request(1))["plant"]
	if !strings.Contains(planted, "AGENTS.md ->") {
		t.Fatalf("the command did not plant the links:\n%s", planted)
	}
	res := e.mustRun(append(append([]string{"chat", "-Q"}, extraArgs...), "-q", "hi")...)
	sys := systemPrompt(t, e.request(2))
	for _, secret := range []string{boxSecretValue, dotEnvSecretValue, "planted-skill-marker"} {
		if strings.Contains(sys, secret) {
			t.Errorf("the next session's system prompt holds %q", secret)
		}
	}
	if strings.Contains(sys, "# Project Context") {
		t.Errorf("a planted context file was loaded:\n%s", sys)
	}
	for _, name := range []string{"AGENTS.md", "CLAUDE.md", ".cursorrules", "HERMES.md", ".hermes.md"} {
		st, err := os.Lstat(filepath.Join(e.workspace, name))
		if err != nil {
			t.Logf("%s was not planted (%v)", name, err)
			continue
		}
		want := name + " is a symbolic link to a path outside the workspace; not loaded"
		if st.Mode().IsRegular() { // a hard link
			want = name + " is one of hermes' protected files in HERMES_HOME"
		}
		if strings.Count(res.stderr, want) != 1 {
			t.Errorf("stderr does not say once %q:\n%s", want, res.stderr)
		}
	}
	if strings.Contains(res.stderr, boxSecretValue) || strings.Contains(res.stderr, dotEnvSecretValue) {
		t.Error("a secret reached stderr")
	}
}

// TestContextFileLinksToSecretsLocalBackend: the local backend (guarded,
// --yolo so the planting command runs without a prompt).
func TestContextFileLinksToSecretsLocalBackend(t *testing.T) {
	e := newE2E(t)
	outside := filepath.Join(filepath.Dir(e.workspace), "outside")
	e.srv = llmtest.NewServer(t,
		terminalTurn("plant", plantLinksScript(e.home, e.workspace, outside)),
		llmtest.Turn{Text: "done"},
		llmtest.Turn{Text: "hello"},
	)
	e.env[0] = "OPENROUTER_BASE_URL=" + e.srv.URL
	e.configureModel()
	runContextLinkAttack(t, e, "--yolo")
}

// TestContextFileLinksToSecretsBoxBindWorkspace: the same attack from
// inside a box whose workspace is bound to the host directory.
func TestContextFileLinksToSecretsBoxBindWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t)
	outside := filepath.Join(e.workspace, "..", "outside") // not visible in the box: the skill dir link dangles there
	e.srv = llmtest.NewServer(t,
		terminalTurn("plant", plantLinksScript(e.home, e.workspace, outside)),
		llmtest.Turn{Text: "done"},
		llmtest.Turn{Text: "hello"},
	)
	e.env[0] = "OPENROUTER_BASE_URL=" + e.srv.URL
	e.configureModel()
	e.mustRun("config", "set", "terminal.backend", "box")
	t.Cleanup(func() { e.run("box", "rm", e.latestSessionID()) })
	runContextLinkAttack(t, e)
}
