package vercel

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/conformance"
	"github.com/hermes-go/hermes/internal/backend/vercel/verceltest"
)

func testConfig(fake *verceltest.Server, state string) Config {
	return Config{CPU: 1, MemoryMB: 2048, Token: fake.Token, TeamID: fake.Team, ProjectID: "prj_test", BaseURL: fake.URL,
		StateDir: state, Lifetime: 10 * time.Minute}
}

func TestConformance(t *testing.T) {
	fake := verceltest.New(t.TempDir(), "tok", "team_1")
	t.Cleanup(fake.Close)
	state := t.TempDir()
	conformance.Run(t, conformance.Target{NoStdinWrite: true, TextOutput: true, Open: func(t *testing.T) backend.Backend {
		cfg := testConfig(fake, state)
		cfg.Persistent = true // the close check reopens the task's files
		b, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}})
	if n := fake.Running(); n != 0 {
		t.Fatalf("%d processes still run in stopped sandboxes", n)
	}
}

// Seed 004's rule: 2,048 MB per vCPU; the generic 5,120 MB default is
// refused with the fix; a custom disk is refused; runtimes are checked.
func TestValidateFollowsVercelAllocation(t *testing.T) {
	base := Config{CPU: 1, MemoryMB: 2048, Token: "t", DiskMB: DefaultDisk}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.MemoryMB = 5120 }, "2,048 MB of memory per vCPU"},
		{func(c *Config) { c.CPU, c.MemoryMB = 2, 2048 }, "(for 2 vCPU: 4096)"},
		{func(c *Config) { c.CPU = 1.5 }, "whole number of vCPUs"},
		{func(c *Config) { c.DiskMB = 10240 }, "custom disk sizes are not supported"},
		{func(c *Config) { c.Runtime = "node18" }, "node24, node22, python3.13"},
		{func(c *Config) { c.Token = "" }, "VERCEL_OIDC_TOKEN"},
	} {
		cfg := base
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", cfg, err, c.want)
		}
	}
	ok := base
	ok.CPU, ok.MemoryMB = 2, 4096
	if err := ok.Validate(); err != nil {
		t.Fatalf("2 vCPU / 4096 MB (seed 004's pair): %v", err)
	}
}

// One sandbox per task, made on first use and reused; a persistent task's
// files come back in a new sandbox from its snapshot; a non-persistent
// close stops the sandbox.
func TestSandboxPerTaskAndSnapshotRestore(t *testing.T) {
	fake := verceltest.New(t.TempDir(), "tok", "team_1")
	t.Cleanup(fake.Close)
	ctx := context.Background()
	cfg := testConfig(fake, t.TempDir())
	cfg.Persistent = true
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e1, err := b.Open(ctx, "task-a")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := b.Open(ctx, "task-a")
	if again != e1 || fake.Calls("/v2/sandboxes") != 1 {
		t.Fatalf("a second Open made another sandbox (%d creates)", fake.Calls("/v2/sandboxes"))
	}
	if err := e1.WriteFile(ctx, "notes.md", []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if len(fake.Sessions()) != 0 {
		t.Fatalf("sandboxes left running after Close: %v", fake.Sessions())
	}
	b2, _ := New(cfg)
	defer b2.Close()
	e2, err := b2.Open(ctx, "task-a")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e2.ReadFile(ctx, "notes.md"); err != nil || string(got) != "kept" {
		t.Fatalf("restored task reads %q, %v", got, err)
	}
}

// A 5xx from the API is retried (as the SDK does) and a 403 is an error
// naming the API's message.
func TestAPIErrorsRetriedAndReported(t *testing.T) {
	fake := verceltest.New(t.TempDir(), "tok", "team_1")
	t.Cleanup(fake.Close)
	b, _ := New(testConfig(fake, ""))
	defer b.Close()
	fake.FailNext("/v2/sandboxes", 503)
	env, err := b.Open(context.Background(), "t")
	if err != nil {
		t.Fatalf("a 503 on create was not retried: %v", err)
	}
	if res, err := env.Exec(context.Background(), backend.ExecRequest{Command: "echo hi"}); err != nil || string(res.Output) != "hi\n" {
		t.Fatalf("exec: %+v %v", res, err)
	}
	bad := testConfig(fake, "")
	bad.Token = "wrong"
	b2, _ := New(bad)
	if _, err := b2.Open(context.Background(), "t"); err == nil || !strings.Contains(err.Error(), "Not authorized (HTTP 403)") {
		t.Fatalf("bad token: %v", err)
	}
}

// A development OIDC token (VERCEL_OIDC_TOKEN) names its team and project
// in its claims, which the requests then carry, as the SDK does.
func TestOIDCTokenNamesTeamAndProject(t *testing.T) {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"owner_id":"team_oidc","project_id":"prj_oidc"}`))
	token := "eyJhbGciOiJSUzI1NiJ9." + payload + ".sig"
	fake := verceltest.New(t.TempDir(), token, "team_oidc")
	t.Cleanup(fake.Close)
	b, err := New(Config{CPU: 1, MemoryMB: 2048, Token: token, BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Open(context.Background(), "t"); err != nil {
		t.Fatalf("request without the token's team: %v", err)
	}
}
