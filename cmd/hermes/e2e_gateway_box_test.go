package main_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/box"
	"github.com/hermes-go/hermes/internal/llm/llmtest"

	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// forwardTCP listens on ip:0 and relays each connection to target (the
// fake model, which listens on 127.0.0.1 only); it returns the port.
func forwardTCP(t *testing.T, ip net.IP, target string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Skipf("cannot listen on %s, the address the host name resolves to: %v", ip, err)
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
	return ln.Addr().(*net.TCPAddr).Port
}

func writeAbs(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// linkOrCopy puts the hermes binary at dst.
func linkOrCopy(t *testing.T, src, dst string) {
	t.Helper()
	if os.Link(src, dst) == nil {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// Seed 002: `hermes box exec -p HOSTPORT:8642 TASK -- hermes gateway run`
// runs the gateway inside a box with API_SERVER_HOST=0.0.0.0; the
// forwarded port answers /health and an authenticated chat completion
// from the host, and the model is reached through the box's egress gate
// (the model host is on terminal.box_network.allow).
func TestGatewayRunsInABoxBehindAForwardedPort(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the box needs root (CI runs as root)")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("the box cannot run here: %v", err)
	}
	// The box reaches the host only through its egress gate, by host name
	// (a client inside never sends loopback addresses to a proxy): use
	// this machine's name, relayed to the fake model.
	hostname, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	ips, err := net.LookupIP(hostname)
	if err != nil || len(ips) == 0 || ips[0].To4() == nil {
		t.Skipf("the host name %q does not resolve to an IPv4 address here (%v)", hostname, err)
	}
	e := newE2E(t)
	release := make(chan struct{})
	e.srv.SetResponder(func(r llmtest.Request) llmtest.Turn {
		if strings.Contains(string(r.Body), "slow one") {
			<-release
			return llmtest.Turn{Text: "drained in the box"}
		}
		return llmtest.Turn{Text: "hello from the boxed gateway"}
	})
	srvURL, _ := url.Parse(e.srv.URL)
	modelPort := forwardTCP(t, ips[0], srvURL.Host)

	boxCfg := fmt.Sprintf("terminal:\n  backend: box\n  cwd: %s\n  container_memory: 512\n  container_disk: 256\n"+
		"  box_network:\n    allow: [%q, %q]\n", e.workspace, hostname, ips[0].String()+"/32")
	writeAbs(t, filepath.Join(e.home, "config.yaml"), boxCfg)
	// HERMES_HOME of the gateway inside the box, in the shared workspace.
	inner := filepath.Join(e.workspace, "inner-home")
	const key = "k-boxed-gateway-0123456789"
	writeAbs(t, filepath.Join(inner, "config.yaml"), fmt.Sprintf("model:\n  provider: custom\n  default: fake-model\n"+
		"  base_url: http://%s:%d\nterminal:\n  cwd: %s\ncompression:\n  enabled: false\n", hostname, modelPort, e.workspace))
	writeAbs(t, filepath.Join(inner, ".env"), "API_SERVER_ENABLED=true\nAPI_SERVER_HOST=0.0.0.0\nAPI_SERVER_PORT=8642\nAPI_SERVER_KEY="+key+"\n")
	linkOrCopy(t, hermesBin, filepath.Join(e.workspace, "hermes"))

	task := "seed002-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { e.run("box", "rm", task) })
	hostPort := testnet.FreePort(t)
	ctx, cancel := context.WithDeadline(context.Background(), waitfor.Deadline(t))
	defer cancel()
	cmd, stdout, stderr := e.command(ctx, nil, "box", "exec", "--new", "--stop-timeout", "60s", "-p", fmt.Sprintf("%d:8642", hostPort), task, "--",
		"env", "HERMES_HOME="+inner, filepath.Join(e.workspace, "hermes"), "gateway", "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	base := "http://127.0.0.1:" + strconv.Itoa(hostPort)
	waitHTTP(t, base+"/health", stderr.String)

	if got := chat(base, "wrong-key"); !strings.Contains(got, "invalid_api_key") {
		t.Errorf("a wrong key was not refused: %s", got)
	}
	if got := chat(base, key); got != "hello from the boxed gateway" {
		t.Fatalf("chat through the forwarded port: %q\n%s", got, stderr.String())
	}
	// One chat turn reached the model through the box's egress: its call,
	// and no other request (a retry of that call on a transient network
	// error under load is allowed: it failed once with 2 requests while a
	// second test suite ran).
	reqs := e.srv.Requests()
	if len(reqs) == 0 || len(reqs) > 2 {
		t.Errorf("the model got %d requests, want the turn's one call", len(reqs))
	}
	for _, r := range reqs {
		if !strings.HasSuffix(r.Path, "/chat/completions") {
			t.Errorf("the model got %s %s, want only the turn's chat call", r.Method, r.Path)
		}
	}
	// SIGTERM to box exec reaches the gateway in the box, which drains the
	// turn in flight and exits 0; box exec exits with it.
	answered := make(chan string, 1)
	go func() { answered <- chatText(base, key, "slow one") }()
	for deadline := waitfor.Deadline(t); len(e.srv.Requests()) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the slow request never reached the model")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	close(release)
	if got := <-answered; got != "drained in the box" {
		t.Fatalf("in-flight answer: %q\n%s\n%s", got, stdout.String(), stderr.String())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("box exec after SIGTERM: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(time.Until(waitfor.Deadline(t))):
		t.Fatalf("box exec did not end after SIGTERM\n%s", stderr.String())
	}
	// box exec passes the command's stdout and stderr on separately.
	if !strings.Contains(stdout.String()+stderr.String(), "gateway stopping: draining") {
		t.Errorf("the gateway in the box did not drain:\n%s\n%s", stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), key) {
		t.Error("the API key reached the output")
	}
}
