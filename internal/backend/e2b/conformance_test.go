package e2b_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/conformance"
	"github.com/hermes-go/hermes/internal/backend/e2b"
	"github.com/hermes-go/hermes/internal/box"

	"github.com/hermes-go/hermes/internal/testnet"
	"github.com/hermes-go/hermes/internal/waitfor"
)

// serveBoxes starts hermes sandbox serve (built from the tree) and returns
// its API and envd URLs and key; it stops with the test.
func serveBoxes(t *testing.T) (api, envd, key string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("hermes sandbox serve needs root")
	}
	if err := box.Preflight(); err != nil {
		t.Skipf("boxes cannot run here: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "hermes")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/hermes-go/hermes/cmd/hermes").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	apiAddr, envdAddr, key := testnet.FreeAddr(t), testnet.FreeAddr(t), "conformance-key"
	cmd := exec.Command(bin, "sandbox", "serve", "--api-addr", apiAddr, "--envd-addr", envdAddr, "--api-key", key,
		"--workspace", filepath.Join(dir, "ws"))
	cmd.Env = append(os.Environ(), "HERMES_HOME="+filepath.Join(dir, "home"))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
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
	for {
		if resp, err := http.Get("http://" + apiAddr + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(waitfor.Deadline(t)) {
			t.Fatalf("hermes sandbox serve did not listen:\n%s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + apiAddr, "http://" + envdAddr, key
}

// TestConformance runs the backend conformance suite on the e2b backend
// against hermes sandbox serve.
func TestConformance(t *testing.T) {
	api, envd, key := serveBoxes(t)
	conformance.Run(t, conformance.Target{Open: func(t *testing.T) backend.Backend {
		b, err := e2b.New(e2b.Options{APIURL: api, SandboxURL: envd, APIKey: key, Timeout: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}})
}

func TestNewNeedsAKey(t *testing.T) {
	if _, err := e2b.New(e2b.Options{}); err == nil {
		t.Fatal("a backend without E2B_API_KEY must be refused")
	}
}

// TestPersistentSandboxAcrossRuns: with container_persistent, a later
// hermes run of the same task (hermes chat -c: a new process, a new
// Backend) connects to the sandbox the earlier run paused, so the files
// it made are there, and no second sandbox is left behind.
func TestPersistentSandboxAcrossRuns(t *testing.T) {
	api, envd, key := serveBoxes(t)
	ctx := context.Background()
	open := func() backend.Backend {
		b, err := e2b.New(e2b.Options{APIURL: api, SandboxURL: envd, APIKey: key, Timeout: 5 * time.Minute, Persistent: true})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := open()
	e, _ := first.Open(ctx, "task-across-runs")
	if err := e.WriteFile(ctx, "kept.txt", []byte("from run 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := open()
	defer second.Close()
	e, _ = second.Open(ctx, "task-across-runs")
	data, err := e.ReadFile(ctx, "kept.txt")
	if err != nil || string(data) != "from run 1" {
		t.Fatalf("run 2 of the task read %q, %v: want run 1's file from the paused sandbox", data, err)
	}
	req, _ := http.NewRequest("GET", api+"/v2/sandboxes", nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []map[string]any
	json.NewDecoder(resp.Body).Decode(&list)
	if len(list) != 1 {
		t.Fatalf("%d sandboxes after two runs of one task, want 1: %v", len(list), list)
	}
}
