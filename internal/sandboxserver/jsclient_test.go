package sandboxserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/llm/llmtest"
	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// served is a running hermes sandbox serve (a subprocess) for the tests.
type served struct {
	bin, home, apiURL, envdURL, key string
	pid                             int    // of the server process
	userUID                         string // the uid its log says the sandbox user has
}

// lockedBuffer is a bytes.Buffer a process writes while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sandboxUserLine is the server's log line naming the sandbox user's uid.
var sandboxUserLine = regexp.MustCompile(`msg="sandbox user" name=user uid=([0-9]+)`)

// jsClientDir is the npm project holding the E2B SDK.
const jsClientDir = "testdata/jsclient"

// needBoxesAndNode skips unless boxes can run here and the E2B SDK is
// installed (npm ci in testdata/jsclient).
func needBoxesAndNode(t *testing.T) string {
	t.Helper()
	needBoxes(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (the E2B JS SDK runs on it)")
	}
	if _, err := os.Stat(filepath.Join(jsClientDir, "node_modules", "e2b")); err != nil {
		t.Skipf("the E2B SDK is not installed: run npm ci in internal/sandboxserver/%s", jsClientDir)
	}
	return node
}

// buildHermes builds the hermes binary from the tree.
func buildHermes(t *testing.T, env ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hermes")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/hermes-go/hermes/cmd/hermes")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// hostIP is a non-loopback IPv4 address of this machine: a box reaches the
// host through its egress gate, and the clients in a box do not send
// loopback destinations to a proxy.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address for the fake model server")
	return ""
}

// forward listens on ip and relays connections to target (the fake model
// server, which listens on loopback).
func forward(t *testing.T, ip, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().String()
}

// serve starts hermes sandbox serve with extra flags and stops it (and
// with it every sandbox) when the test ends.
func serve(t *testing.T, bin string, extra ...string) *served {
	t.Helper()
	s, _ := serveWithKey(t, bin, "test-key-1", extra...)
	return s
}

// serveWithKey is serve with API key key ("": none, so keyless); it also
// returns the server's process.
func serveWithKey(t *testing.T, bin, key string, extra ...string) (*served, *os.Process) {
	t.Helper()
	s := &served{bin: bin, home: t.TempDir(), key: key}
	api, envd := testnet.FreeAddr(t), testnet.FreeAddr(t)
	s.apiURL, s.envdURL = "http://"+api, "http://"+envd
	args := []string{"sandbox", "serve", "--api-addr", api, "--envd-addr", envd, "--workspace", filepath.Join(s.home, "..", "ws")}
	if key != "" {
		args = append(args, "--api-key", key)
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Env = append(os.Environ(), "HERMES_HOME="+s.home)
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.pid = cmd.Process.Pid
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Until(waitfor.Deadline(t))):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	listening := waitfor.Poll(t, func() bool {
		select {
		case <-exited:
			t.Fatalf("hermes sandbox serve exited:\n%s", log.String())
		default:
		}
		resp, err := http.Get(s.apiURL + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	if !listening {
		t.Fatalf("hermes sandbox serve did not listen:\n%s", log.String())
	}
	m := sandboxUserLine.FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("hermes sandbox serve logged no sandbox user line:\n%s", log.String())
	}
	s.userUID = m[1]
	return s, cmd.Process
}

// node runs a script of the JS client against s.
func (s *served) node(t *testing.T, node, script string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = jsClientDir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"E2B_API_URL=" + s.apiURL, "E2B_SANDBOX_URL=" + s.envdURL, "E2B_API_KEY=" + s.key}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// e2bCLI runs E2B's CLI (@e2b/cli) against s.
func (s *served) e2bCLI(t *testing.T, node string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("node_modules", "@e2b", "cli", "dist", "index.js")}, args...)...)
	cmd.Dir = jsClientDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "E2B_API_URL=" + s.apiURL,
		"E2B_SANDBOX_URL=" + s.envdURL, "E2B_API_KEY=" + s.key, "NO_COLOR=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("e2b %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// boxesLeft lists the boxes hermes box ls shows for s's HERMES_HOME.
func (s *served) boxesLeft(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(s.bin, "box", "ls")
	cmd.Env = append(os.Environ(), "HERMES_HOME="+s.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hermes box ls: %v\n%s", err, out)
	}
	return string(out)
}

// modelAnswers scripts the fake model for seed 000: the headless question,
// and the two runs of the skill scenario (run 1 creates incident-triage,
// run 2 answers from it only when the skill reached the prompt).
func modelAnswers(r llmtest.Request) llmtest.Turn {
	body := string(r.Body)
	toolResult := strings.Contains(body, `"role":"tool"`)
	switch {
	case strings.Contains(body, "Inspect this workspace"):
		return llmtest.Turn{Text: "SCRIPTED: an empty E2B-style workspace."}
	case strings.Contains(body, "create a reusable skill named incident-triage") && !toolResult:
		content := "---\nname: incident-triage\ndescription: Triage checkout incidents\n---\n# Incident triage\n## Procedure\nTRIAGE-MARKER compare error rates by release.\n"
		args, _ := json.Marshal(map[string]string{"action": "create", "name": "incident-triage", "content": content})
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "skill_manage", Args: string(args)}}}
	case strings.Contains(body, "create a reusable skill named incident-triage"):
		return llmtest.Turn{Text: "Created the incident-triage skill."}
	case strings.Contains(body, "Use the incident-triage skill") && strings.Contains(body, "TRIAGE-MARKER"):
		return llmtest.Turn{Text: "TRIAGED: checkout-43 caused the spike (417 errors)."}
	case strings.Contains(body, "Use the incident-triage skill"):
		return llmtest.Turn{Text: "the skill was not loaded"}
	}
	return llmtest.Turn{Text: "ok"}
}

// TestSeed000WithTheE2BSDK runs seed 000's JavaScript unchanged through the
// E2B SDK against hermes sandbox serve: hermes runs inside the box, talks to
// the fake model through the box's egress gate, and answers on stdout; the
// skill made in run 1 is used in run 2. Then the SDK features the server
// honours, and a sandbox shows in hermes box ls until it is killed.
func TestSeed000WithTheE2BSDK(t *testing.T) {
	node := needBoxesAndNode(t)
	bin := buildHermes(t)
	model := llmtest.NewServer(t)
	model.SetResponder(modelAnswers)
	addr := forward(t, hostIP(t), strings.TrimPrefix(strings.TrimSuffix(model.URL, "/v1"), "http://"))
	s := serve(t, bin, "--env", "OPENROUTER_BASE_URL=http://"+addr+"/v1", "--allow", addr)
	providerEnv := "OPENROUTER_API_KEY=sk-or-fake-for-tests"

	t.Run("headless", func(t *testing.T) {
		out := s.node(t, node, "seed000_headless.mjs", providerEnv)
		if !strings.Contains(out, "SCRIPTED: an empty E2B-style workspace.") {
			t.Fatalf("seed 000 printed %q, want the scripted answer", out)
		}
	})
	t.Run("skill", func(t *testing.T) {
		out := s.node(t, node, "seed000_skill.mjs", providerEnv)
		if !strings.Contains(out, "TRIAGED: checkout-43 caused the spike") {
			t.Fatalf("seed 000's second run printed %q, want the answer made with the incident-triage skill", out)
		}
	})
	t.Run("features", func(t *testing.T) {
		if out := s.node(t, node, "features.mjs"); !strings.Contains(out, "features ok") {
			t.Fatalf("features.mjs printed %q", out)
		}
	})
	t.Run("users", func(t *testing.T) {
		if out := s.node(t, node, "users.mjs", "SANDBOX_USER_UID="+s.userUID); !strings.Contains(out, "users ok") {
			t.Fatalf("users.mjs printed %q", out)
		}
	})
	t.Run("e2b cli", func(t *testing.T) {
		cli := filepath.Join(jsClientDir, "node_modules", ".bin", "e2b")
		if _, err := os.Stat(cli); err != nil {
			t.Skip("@e2b/cli is not installed (npm ci in testdata/jsclient)")
		}
		lines := strings.Fields(s.e2bCLI(t, node, "sbx", "create", "-d", "hermes"))
		if len(lines) == 0 {
			t.Fatal("e2b sbx create -d printed nothing")
		}
		id := lines[len(lines)-1]
		if out := s.e2bCLI(t, node, "sbx", "list"); !strings.Contains(out, id) || !strings.Contains(out, "Running") {
			t.Fatalf("e2b sbx list does not show %s running:\n%s", id, out)
		}
		if out := s.e2bCLI(t, node, "sbx", "kill", id); !strings.Contains(out, "has been killed") {
			t.Fatalf("e2b sbx kill %s: %s", id, out)
		}
		if out := s.e2bCLI(t, node, "sbx", "list"); strings.Contains(out, id) {
			t.Fatalf("killed sandbox still listed:\n%s", out)
		}
	})
	t.Run("box ls", func(t *testing.T) {
		id := s.create(t, "base")
		if ls := s.boxesLeft(t); !strings.Contains(ls, "sbx-"+id) {
			t.Fatalf("hermes box ls does not show sandbox %s:\n%s", id, ls)
		}
		s.do(t, "DELETE", "/sandboxes/"+id, "", http.StatusNoContent)
		// The box is removed in the background, right after the answer.
		if !waitfor.Poll(t, func() bool { return !strings.Contains(s.boxesLeft(t), "sbx-") }) {
			t.Fatalf("killed sandboxes left boxes:\n%s", s.boxesLeft(t))
		}
	})
}

// do sends a REST request and checks its status.
func (s *served) do(t *testing.T, method, path, body string, want int) []byte {
	t.Helper()
	req, _ := http.NewRequest(method, s.apiURL+path, strings.NewReader(body))
	req.Header.Set("X-API-Key", s.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	return data
}

func (s *served) create(t *testing.T, template string) string {
	t.Helper()
	data := s.do(t, "POST", "/v2/sandboxes", fmt.Sprintf(`{"templateID":%q,"timeout":120}`, template), http.StatusCreated)
	var sb struct {
		SandboxID string `json:"sandboxID"`
	}
	if err := json.Unmarshal(data, &sb); err != nil || sb.SandboxID == "" {
		t.Fatalf("create answered %s", data)
	}
	return sb.SandboxID
}
