package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/internal/approval"
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
