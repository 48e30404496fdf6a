package main_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// Seed 002's hermes lines on their own: the quick example's
// `sh -c 'hermes -z ... --provider anthropic -m MODEL --yolo'` with the
// three ANTHROPIC_* variables (answer on stdout, exit 0), `hermes
// --version`, the flags of its table, and the gateway's subcommands.
func TestSeed002CommandLinesAsWritten(t *testing.T) {
	e := newE2E(t)
	e.srv.SetResponder(func(r llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "s[::-1]"} })
	const model = "claude-sonnet-4-5"
	env := []string{"ANTHROPIC_BASE_URL=" + e.srv.AnthropicURL, "ANTHROPIC_API_KEY=sk-ant-seed002", "ANTHROPIC_AUTH_TOKEN=sk-ant-seed002",
		"PATH=" + filepath.Dir(hermesBin) + ":" + os.Getenv("PATH")}
	line := fmt.Sprintf(`hermes -z "Write a one-line Python snippet that reverses a string." --provider anthropic -m %s --yolo`, model)
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = e.workspace
	cmd.Env = append(e.baseEnv(), env...)
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "s[::-1]" {
		t.Fatalf("sh -c %s: %v, stdout %q", line, err, out)
	}
	if r := e.srv.Requests()[0]; !strings.HasSuffix(r.Path, "/v1/messages") || !strings.Contains(string(r.Body), model) {
		t.Errorf("the request went to %s with %s", r.Path, r.Body)
	}
	if v := e.mustRun("--version"); !strings.HasPrefix(v.stdout, "Hermes Agent v") || !strings.Contains(v.stdout, "Install") {
		t.Errorf("hermes --version:\n%s", v)
	}
	for _, flags := range [][]string{{"--reasoning", "high"}, {"-t", "terminal,file"}, {"--safe-mode"}, {"--ignore-user-config"}, {"--cli"}} {
		args := append([]string{"-z", "hi", "--provider", "anthropic", "-m", model, "--yolo"}, flags...)
		if res := e.runEnv(env, args...); res.code != 0 || strings.TrimSpace(res.stdout) != "s[::-1]" {
			t.Errorf("hermes %s:\n%s", strings.Join(args, " "), res)
		}
	}
	help := e.mustRun("gateway", "--help")
	for _, sub := range []string{"run", "start", "stop", "status", "setup"} {
		if !strings.Contains(help.stdout, "\n  "+sub+" ") {
			t.Errorf("hermes gateway has no %s:\n%s", sub, help.stdout)
		}
	}
}

// Seed 002's background gateway, in a hermes box: the box starts with its
// port forwarded (BoxLite's ports=[(8080, 8080)] is `hermes box start -p`),
// the seed's exec launches `nohup hermes gateway run ... &` and returns at
// once, the caller polls `cat /proc/net/tcp` in the box for 1F90 exactly
// as the seed's wait_for_port does, reads the gateway's log, reaches the
// gateway from the host through the forwarded port, and stops the box.
func TestSeed002BackgroundGatewayInABox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	e := newE2E(t)
	writeAbs(t, filepath.Join(e.home, "config.yaml"), fmt.Sprintf("terminal:\n  backend: box\n  cwd: %s\n  container_memory: 512\n  container_disk: 256\n", e.workspace))
	// The gateway's HERMES_HOME (configured beforehand, as the seed says
	// with `hermes gateway setup`), and hermes on the box's PATH.
	inner := filepath.Join(e.workspace, "gateway-home")
	const key = "k-seed002-gateway-0123456789"
	writeAbs(t, filepath.Join(inner, "config.yaml"), "model:\n  provider: custom\n  default: fake-model\n  base_url: "+e.srv.URL+"\n")
	writeAbs(t, filepath.Join(inner, ".env"), "API_SERVER_ENABLED=true\nAPI_SERVER_HOST=0.0.0.0\nAPI_SERVER_PORT=8080\nAPI_SERVER_KEY="+key+"\n")
	binDir := filepath.Join(e.workspace, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	linkOrCopy(t, hermesBin, filepath.Join(binDir, "hermes"))

	task := "seed002-bg-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { e.run("box", "stop", task); e.run("box", "rm", task) })
	hostPort := testnet.FreePort(t)
	res := e.mustRun("box", "start", "-p", fmt.Sprintf("%d:8080", hostPort), "-e", "PATH="+binDir+":/usr/local/bin:/usr/bin:/bin",
		"-e", "HERMES_HOME="+inner, task)
	if strings.TrimSpace(res.stdout) != task {
		t.Fatalf("box start printed %q", res.stdout)
	}
	// await box.exec("sh", "-c", "nohup hermes gateway run > /tmp/gateway.log 2>&1 &")
	e.mustRun("box", "exec", task, "--", "sh", "-c", "nohup hermes gateway run > /tmp/gateway.log 2>&1 &")
	// wait_for_port: port_hex = f"{port:04X}"; port_hex in result.stdout.upper()
	waitfor.Until(t, "1F90 in the box's /proc/net/tcp", func() bool {
		return strings.Contains(strings.ToUpper(e.mustRun("box", "exec", task, "--", "cat", "/proc/net/tcp").stdout), "1F90")
	})
	if log := e.mustRun("box", "exec", task, "--", "cat", "/tmp/gateway.log"); !strings.Contains(log.stdout, "listening on http://0.0.0.0:8080") {
		t.Errorf("the gateway's log:\n%s", log)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", hostPort))
	if err != nil {
		t.Fatalf("the gateway is unreachable from the host: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Errorf("/health through the forwarded port: %d %s", resp.StatusCode, body)
	}
	if got := chat(fmt.Sprintf("http://127.0.0.1:%d", hostPort), "wrong-key"); !strings.Contains(got, "invalid_api_key") {
		t.Errorf("a wrong key was not refused: %s", got)
	}
	if ls := e.mustRun("box", "ls"); !strings.Contains(ls.stdout, fmt.Sprintf("127.0.0.1:%d->8080", hostPort)) {
		t.Errorf("box ls:\n%s", ls)
	}
	if res := e.mustRun("box", "stop", task); res.stdout != "stopped "+task+"\n" {
		t.Errorf("box stop:\n%s", res)
	}
	if _, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", hostPort)); err == nil {
		t.Error("the forwarded port still answers after box stop")
	}
}
