package sandboxserver_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/waitfor"
)

// serverProcess is one run of hermes sandbox serve on a HERMES_HOME and
// addresses that outlive it.
type serverProcess struct {
	cmd    *exec.Cmd
	log    bytes.Buffer
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
	api, envd := freePort(t), freePort(t)
	s := &served{bin: bin, home: home, apiURL: "http://" + api, envdURL: "http://" + envd, key: "durable-key-1"}
	const other = "durable-key-other"
	t0 := time.Now()
	first := startServer(t, bin, home, api, envd, s.key, other)
	t.Logf("first start (no sandboxes): %v", time.Since(t0))
	ids := strings.TrimSpace(s.node(t, node, "durable_before.mjs"))

	t0 = time.Now()
	first.stop(t, syscall.SIGTERM)
	stopped := time.Since(t0)
	if !strings.Contains(first.log.String(), "sandboxes paused and kept for the next start") {
		t.Fatalf("no pause at the shutdown:\n%s", first.log.String())
	}
	t0 = time.Now()
	second := startServer(t, bin, home, api, envd, s.key, other)
	started := time.Since(t0)
	t.Logf("SIGTERM with 10 running and 10 paused sandboxes: exited in %v; started again (10 boxes run again) in %v", stopped, started)
	if out := s.node(t, node, "durable_after.mjs", "IDS="+ids, "OTHER_E2B_API_KEY="+other); !strings.Contains(out, "durable ok") {
		t.Fatalf("after the SIGTERM restart: %s", out)
	}

	second.stop(t, syscall.SIGKILL) // all 20 run now
	t0 = time.Now()
	third := startServer(t, bin, home, api, envd, s.key, other)
	t.Logf("after kill -9 with 20 running sandboxes: started again (20 boxes run again) in %v", time.Since(t0))
	t.Logf("the servers' own figures:\n%s%s", restoreLines(&second.log), restoreLines(&third.log))
	if out := s.node(t, node, "durable_after.mjs", "IDS="+ids); !strings.Contains(out, "durable ok") {
		t.Fatalf("after kill -9 and a restart: %s", out)
	}
}

// restoreLines are the server log's lines about reading the catalog back.
func restoreLines(log *bytes.Buffer) string {
	var out strings.Builder
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "read back") || strings.Contains(l, "kept for the next start") {
			out.WriteString(l + "\n")
		}
	}
	return out.String()
}
