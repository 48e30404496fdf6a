package tool

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/backend"
	"github.com/hermes-go/hermes/internal/backend/local"
	"github.com/hermes-go/hermes/internal/protect"
)

// Issue 23: write_file and patch refuse terminal.protected_paths
// (.git/config, .git/hooks/...) unless a person approves, and the refusal
// says why and how to change it.
func TestFileToolsAskBeforeWritingProtectedPaths(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, ".git/config", "[core]\n\tbare = false\n")
	f.opts.Protected = protect.New(protect.Defaults())
	ctx := context.Background()
	run := func(tl interface {
		Run(context.Context, Call) Result
	}, args string) Result {
		return tl.Run(ctx, Call{SessionID: "s", Args: json.RawMessage(args)})
	}
	for _, c := range []struct {
		tool interface {
			Run(context.Context, Call) Result
		}
		args string
	}{
		{NewWriteFileTool(f.opts), `{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}`},
		{NewWriteFileTool(f.opts), `{"path": "./.git/config", "content": "[core]\n\tfsmonitor = evil\n"}`},
		{NewPatchTool(f.opts), `{"path": ".git/config", "old_string": "bare = false", "new_string": "fsmonitor = evil"}`},
		{NewWriteFileTool(f.opts), `{"path": ".vscode/tasks.json", "content": "{}"}`},
	} {
		r := run(c.tool, c.args)
		if !r.IsError || !strings.Contains(r.Content, "terminal.protected_paths") {
			t.Errorf("%s: want a refusal naming terminal.protected_paths, got %q", c.args, r.Content)
		}
	}
	if got := f.read(t, ".git/config"); strings.Contains(got, "fsmonitor") {
		t.Fatalf(".git/config was changed: %q", got)
	}
	if r := run(NewWriteFileTool(f.opts), `{"path": "src/main.go", "content": "package main\n"}`); r.IsError {
		t.Fatalf("an ordinary write was refused: %s", r.Content)
	}

	// A person who approves lets the write through; a denial keeps it out.
	deny := approval.New(approval.Config{Timeout: 1})
	deny.Attach(approval.PrompterFunc(func(context.Context, approval.Prompt) (approval.Answer, error) { return approval.Deny, nil }))
	f.opts.Approvals = deny
	if r := run(NewWriteFileTool(f.opts), `{"path": ".gitmodules", "content": "x"}`); !r.IsError || !strings.Contains(r.Content, "terminal.protected_paths") {
		t.Errorf("a denied write went through: %q", r.Content)
	}
	var asked approval.Prompt
	allow := approval.New(approval.Config{})
	allow.Attach(approval.PrompterFunc(func(_ context.Context, p approval.Prompt) (approval.Answer, error) {
		asked = p
		return approval.Once, nil
	}))
	f.opts.Approvals = allow
	if r := run(NewWriteFileTool(f.opts), `{"path": ".gitmodules", "content": "x"}`); r.IsError {
		t.Fatalf("an approved write was refused: %s", r.Content)
	}
	if asked.Tool != "write_file" || !strings.HasSuffix(asked.Path, "/.gitmodules") {
		t.Errorf("the prompt was %+v", asked)
	}
}

// Attacker trial on issue 23: git reads config from more places than the
// workspace's own .git/config: a nested repository's .git/config (a
// committed gitlink makes the user's `git status` at the top run its
// core.fsmonitor) and .git/commondir (git then reads the named directory's
// config and hooks). The approval classifier already asks for a
// redirection into vendor/lib/.git/config; write_file must not write
// either unasked.
func TestFileToolsAskBeforeWritingGitConfigElsewhere(t *testing.T) {
	f := newFileFixture(t)
	f.write(t, ".git/config", "[core]\n\tbare = false\n")
	f.write(t, "sub/.git/config", "[core]\n\tbare = false\n")
	f.opts.Protected = protect.New(protect.Defaults())
	for _, args := range []string{
		`{"path": "sub/.git/config", "content": "[core]\n\tfsmonitor = \"touch /tmp/pwned\"\n"}`,
		`{"path": ".git/commondir", "content": "evil\n"}`,
	} {
		r := NewWriteFileTool(f.opts).Run(context.Background(), Call{SessionID: "s", Args: json.RawMessage(args)})
		if !r.IsError {
			t.Errorf("%s: written without asking: %q", args, r.Content)
		}
	}
}

// A protected path the user approved writing (write_file creates
// .vscode/settings.json, missing when the backend started) stays after the next command, while
// one a command creates is moved aside by the backend's check.
func TestApprovedProtectedWriteSurvivesTheCommandCheck(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	b, err := local.NewWithOptions(local.Options{Cwd: dir, Environ: func() []string { return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home} },
		ProtectedPaths: protect.Defaults(), Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	allow := approval.New(approval.Config{})
	allow.Attach(approval.PrompterFunc(func(context.Context, approval.Prompt) (approval.Answer, error) { return approval.Once, nil }))
	opts := FileToolOptions{Backend: b, Home: home, HermesHome: filepath.Join(home, ".hermes"), Protected: protect.New(protect.Defaults()), Approvals: allow}
	ctx := context.Background()
	if r := NewWriteFileTool(opts).Run(ctx, Call{SessionID: "s", Args: json.RawMessage(`{"path": ".vscode/settings.json", "content": "{}\n"}`)}); r.IsError {
		t.Fatalf("the approved write was refused: %s", r.Content)
	}
	env, err := b.Open(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Exec(ctx, backend.ExecRequest{Command: "echo x > .mcp.json; echo done"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".vscode", "settings.json")); err != nil {
		t.Errorf("the approved .vscode/settings.json was moved by the check after a command: %v\n%s", err, res.Output)
	}
	if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); err == nil || !strings.Contains(string(res.Output), ".mcp.json"+protect.Refused) {
		t.Errorf("the .mcp.json a command created was not moved aside:\n%s", res.Output)
	}
}
