package sandboxserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/testio"
	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// serverProcess is one run of hermes sandbox serve on a HERMES_HOME and
// addresses that outlive it.
type serverProcess struct {
	cmd    *exec.Cmd
	log    testio.Buffer
	exited chan struct{}
}

// startServer starts hermes sandbox serve on home and waits until it
// answers; it is killed (SIGKILL) at the end of the test if still running.
func startServer(t *testing.T, bin, home, api, envd string, keys ...string) *serverProcess {
	t.Helper()
	args := []string{"sandbox", "serve", "--api-addr", api, "--envd-addr", envd, "--workspace", filepath.Join(home, "..", "ws")}
	for _, k := range keys {
		args = append(args, "--api-key", k)
	}
	return startServerArgs(t, bin, home, api, args)
}

// startServerArgs starts hermes with args on home (its API at api) and
// waits until it answers, as startServer.
func startServerArgs(t *testing.T, bin, home, api string, args []string) *serverProcess {
	t.Helper()
	p := &serverProcess{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "HERMES_HOME="+home)
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.stop(t, syscall.SIGTERM)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", p.log.String())
		}
	})
	up := waitfor.Poll(t, func() bool {
		select {
		case <-p.exited:
			t.Fatalf("hermes sandbox serve exited:\n%s", p.log.String())
		default:
		}
		resp, err := http.Get("http://" + api + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	if !up {
		t.Fatalf("hermes sandbox serve did not listen:\n%s", p.log.String())
	}
	return p
}

// stop sends sig and waits for the process to exit.
func (p *serverProcess) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(time.Until(waitfor.Deadline(t))):
		p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("hermes sandbox serve did not exit after %v:\n%s", sig, p.log.String())
	}
}

// TestSandboxesSurviveARestart is issue 29's durability proof, through
// the E2B JS SDK against real server processes: 21 sandboxes with a file
// each, 10 paused, 1 killed; SIGTERM; start again: the 20 kept ones are
// connectable with their files and run commands, the killed one answers
// 404 (SandboxNotFoundError), another tenant finds none. Then kill -9 of
// the server: the catalog and the layers survive it, and so do the 20.
func TestSandboxesSurviveARestart(t *testing.T) {
	node := needBoxesAndNode(t)
	bin := buildHermes(t)
	home := t.TempDir()
	api, envd := testnet.FreeAddr(t), testnet.FreeAddr(t)
	s := &served{bin: bin, home: home, apiURL: "http://" + api, envdURL: "http://" + envd, key: "durable-key-1"}
	const other = "durable-key-other"
	t0 := time.Now()
	first := startServer(t, bin, home, api, envd, s.key, other)
	t.Logf("first start (no sandboxes): %v", time.Since(t0))
	ids := strings.TrimSpace(s.node(t, node, "durable_before.mjs"))

	inflight := s.startNode(t, node, "durable_inflight.mjs", "ID="+firstID(t, ids, "running"))
	inflight.waitLine(t, "started")
	t0 = time.Now()
	first.stop(t, syscall.SIGTERM)
	stopped := time.Since(t0)
	if out := inflight.wait(t); !strings.Contains(out, "finished-after-sigterm") {
		t.Fatalf("the command in flight at the SIGTERM was not answered: %q", out)
	}
	if !strings.Contains(first.log.String(), "sandboxes paused and kept for the next start") {
		t.Fatalf("no pause at the shutdown:\n%s", first.log.String())
	}
	t0 = time.Now()
	second := startServer(t, bin, home, api, envd, s.key, other)
	started := time.Since(t0)
	t.Logf("SIGTERM with 10 running and 10 paused sandboxes: exited in %v; serving again in %v", stopped, started)
	if out := s.node(t, node, "durable_after.mjs", "IDS="+ids, "OTHER_E2B_API_KEY="+other); !strings.Contains(out, "durable ok") {
		t.Fatalf("after the SIGTERM restart: %s", out)
	}

	second.stop(t, syscall.SIGKILL) // all 20 run now
	t0 = time.Now()
	third := startServer(t, bin, home, api, envd, s.key, other)
	t.Logf("after kill -9 with 20 running sandboxes: serving again in %v", time.Since(t0))
	if out := s.node(t, node, "durable_after.mjs", "IDS="+ids); !strings.Contains(out, "durable ok") {
		t.Fatalf("after kill -9 and a restart: %s", out)
	}
	t.Logf("the servers' own figures:\n%s%s%s", restoreLines(&first.log), restoreLines(&second.log), restoreLines(&third.log))
}

// restoreLines are the server log's lines about reading the catalog back.
func restoreLines(log *testio.Buffer) string {
	var out strings.Builder
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "read back") || strings.Contains(l, "kept for the next start") || strings.Contains(l, "run again") {
			out.WriteString(l + "\n")
		}
	}
	return out.String()
}

// firstID is the first sandbox id of kind in durable_before.mjs's output.
func firstID(t *testing.T, ids, kind string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(ids), &m); err != nil {
		t.Fatalf("durable_before.mjs printed %q: %v", ids, err)
	}
	list, _ := m[kind].([]any)
	if len(list) == 0 {
		t.Fatalf("no %s sandbox in %s", kind, ids)
	}
	return list[0].(string)
}

// nodeScript is a node script running in the background.
type nodeScript struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	out    strings.Builder
	stderr bytes.Buffer
}

// startNode starts a script of the JS client against s without waiting.
func (s *served) startNode(t *testing.T, node, script string, env ...string) *nodeScript {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	t.Cleanup(cancel)
	p := &nodeScript{cmd: exec.CommandContext(ctx, node, script)}
	p.cmd.Dir = jsClientDir
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"E2B_API_URL=" + s.apiURL, "E2B_SANDBOX_URL=" + s.envdURL, "E2B_API_KEY=" + s.key}, env...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.lines = bufio.NewScanner(out)
	return p
}

// waitLine reads the script's output up to a line equal to want.
func (p *nodeScript) waitLine(t *testing.T, want string) {
	t.Helper()
	for p.lines.Scan() {
		p.out.WriteString(p.lines.Text() + "\n")
		if p.lines.Text() == want {
			return
		}
	}
	t.Fatalf("%s ended before printing %q:\n%s\n%s", p.cmd.Args[1], want, p.out.String(), p.stderr.String())
}

// wait returns the rest of the script's output once it has ended well.
func (p *nodeScript) wait(t *testing.T) string {
	t.Helper()
	for p.lines.Scan() {
		p.out.WriteString(p.lines.Text() + "\n")
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\n%s\n%s", p.cmd.Args[1], err, p.out.String(), p.stderr.String())
	}
	return p.out.String()
}
