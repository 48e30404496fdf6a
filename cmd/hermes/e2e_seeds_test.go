package main_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend/vercel/verceltest"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
)

// The seed documents' hermes command lines, run as written (issue 25).
// What runs inside E2B is driven through the E2B SDK in
// internal/sandboxserver (TestSeed000WithTheE2BSDK); seed 002's box flow
// is TestSeed002BackgroundGatewayInABox.

// seed000Common is seed 000's `common` prefix.
const seed000Common = `chat -Q --yolo --provider openrouter --model anthropic/claude-sonnet-4.6 `

// splitSeedLine splits a seed's command line after `hermes` into
// arguments as sh would (double quotes only, as the seeds use).
func splitSeedLine(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inQ, have := false, false
	for _, r := range line {
		switch {
		case r == '"':
			inQ, have = !inQ, true
		case r == ' ' && !inQ:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if inQ {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// Seed 000 on the host: the headless turn, the skill made in one run and
// used with --skills in the next, and `-c` continuing the latest session.
func TestSeed000CommandLinesAsWritten(t *testing.T) {
	e := newE2E(t)
	e.srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		body := string(r.Body)
		toolResult := strings.Contains(body, `"role":"tool"`)
		switch {
		case strings.Contains(body, "Continue the investigation"):
			if strings.Contains(body, "Inspect this workspace") {
				return llmtest.Turn{Text: "CONTINUED the earlier session"}
			}
			return llmtest.Turn{Text: "a fresh session"}
		case strings.Contains(body, "Inspect this workspace"):
			return llmtest.Turn{Text: "SCRIPTED: a workspace summary"}
		case strings.Contains(body, "create a reusable skill named incident-triage") && !toolResult:
			content := "---\nname: incident-triage\ndescription: Triage checkout incidents\n---\n# Incident triage\nTRIAGE-MARKER compare error rates by release.\n"
			args, _ := json.Marshal(map[string]string{"action": "create", "name": "incident-triage", "content": content})
			return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "skill_manage", Args: string(args)}}}
		case strings.Contains(body, "create a reusable skill named incident-triage"):
			return llmtest.Turn{Text: "Created the incident-triage skill."}
		case strings.Contains(body, "Use the incident-triage skill") && strings.Contains(body, "TRIAGE-MARKER"):
			return llmtest.Turn{Text: "TRIAGED with the skill"}
		}
		return llmtest.Turn{Text: "unexpected request"}
	})
	lines := []struct{ line, want string }{
		{seed000Common + `-q "Study /home/user/runbook.md, apply it to /home/user/incidents/first.json, and create a reusable skill named incident-triage"`, "Created the incident-triage skill."},
		{seed000Common + `--skills incident-triage -q "Use the incident-triage skill to investigate the newest incident"`, "TRIAGED with the skill"},
		{seed000Common + `-q "Inspect this workspace and summarize its purpose"`, "SCRIPTED: a workspace summary"},
		{`chat -Q --yolo -c -q "Continue the investigation and implement the first fix"`, "CONTINUED the earlier session"},
	}
	for _, l := range lines {
		res := e.mustRun(splitSeedLine(t, l.line)...)
		if strings.TrimSpace(res.stdout) != l.want {
			t.Errorf("hermes %s\nprinted %q, want %q\n%s", l.line, res.stdout, l.want, res.stderr)
		}
	}
	// The -c line names no model: Hermes then uses the configured one.
	for i := range len(e.srv.Requests()) - 1 {
		if m := e.request(i)["model"]; m != "anthropic/claude-sonnet-4.6" {
			t.Errorf("request %d: model %v", i, m)
		}
	}
	if _, err := os.Stat(filepath.Join(e.home, "skills")); err != nil {
		t.Errorf("the skill was not saved under HERMES_HOME/skills: %v", err)
	}
}

// fakeOIDC is a JWT whose payload has exp (not signed: hermes reads exp only).
func fakeOIDC(exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"exp":%d,"owner_id":"team_1","project_id":"prj_1"}`, exp.Unix()))) + ".sig"
}

// Seed 004: the four `hermes config set` lines, `hermes doctor` naming the
// runtime, the Sandbox API client and the OIDC auth with its expiry,
// `hermes version`, and `hermes` running the agent's terminal command in a
// Vercel sandbox (the fake Sandbox API), with the model behind Vercel AI
// Gateway as the doc's last step configures it.
func TestSeed004CommandLinesAsWritten(t *testing.T) {
	e := newE2E(t)
	for _, l := range []string{
		"config set terminal.backend vercel_sandbox",
		"config set terminal.vercel_runtime node24",
		"config set terminal.container_cpu 2",
		"config set terminal.container_memory 4096",
	} {
		e.mustRun(strings.Fields(l)...)
	}
	cfg, _ := os.ReadFile(filepath.Join(e.home, "config.yaml"))
	for _, want := range []string{"backend: vercel_sandbox", "vercel_runtime: node24", "container_cpu: 2", "container_memory: 4096"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	token := fakeOIDC(time.Now().Add(12 * time.Hour))
	fake := verceltest.New(t.TempDir(), token, "team_1")
	defer fake.Close()
	e.env = append(e.env, "VERCEL_OIDC_TOKEN="+token, "VERCEL_API_URL="+fake.URL)
	doc := e.run("doctor")
	for _, want := range []string{"vercel runtime", "node24", "vercel sandbox client", "2 vCPU, 4096 MB", "vercel auth", "OIDC token (VERCEL_OIDC_TOKEN"} {
		if !strings.Contains(doc.stdout, want) {
			t.Errorf("hermes doctor lacks %q:\n%s", want, doc)
		}
	}
	if v := e.mustRun("version"); !strings.HasPrefix(v.stdout, "Hermes Agent v") {
		t.Errorf("hermes version:\n%s", v)
	}
	// `hermes` with the terminal tool: the command runs in the sandbox.
	e.env = append(e.env, "AI_GATEWAY_BASE_URL="+e.srv.URL)
	e.mustRun("config", "set", "model.provider", "ai-gateway")
	e.srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if strings.Contains(string(r.Body), `"role":"tool"`) {
			return llmtest.Turn{Text: "ran it in the sandbox"}
		}
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "terminal", Args: `{"command":"echo from-the-sandbox"}`}}}
	})
	res := e.mustRun("chat", "-Q", "--yolo", "-q", "run echo")
	if strings.TrimSpace(res.stdout) != "ran it in the sandbox" {
		t.Errorf("hermes chat:\n%s", res)
	}
	if fake.Calls("/cmd") == 0 {
		t.Errorf("the terminal command did not reach the Vercel Sandbox API (calls: sandboxes %d)", fake.Calls("/sandboxes"))
	}
	if !strings.Contains(fmt.Sprint(e.requests()), "from-the-sandbox") {
		t.Error("the command's output did not reach the model")
	}
}
