package tool

import (
	"context"
	"testing"

	"github.com/hermes-go/hermes/internal/llm"
)

func TestCheckToolsets(t *testing.T) {
	r := NewRegistry(NewTodoList())
	unknown, unavailable := r.CheckToolsets([]string{"todo", "all", "image_gen", "bogus", "todo_list"})
	if len(unknown) != 2 || unknown[0] != "bogus" || unknown[1] != "todo_list" {
		t.Errorf("unknown = %v, want [bogus todo_list]", unknown)
	}
	if len(unavailable) != 1 || unavailable[0] != "image_gen" {
		t.Errorf("unavailable = %v, want [image_gen]", unavailable)
	}
}

func TestToolsetSelectedMCP(t *testing.T) {
	for _, tc := range []struct {
		list []string
		ts   string
		want bool
	}{
		{nil, "mcp-github", true},
		{[]string{"all"}, "mcp-github", true},
		{[]string{"terminal"}, "mcp-github", false},
		{[]string{"terminal", "mcp"}, "mcp-github", true},
		{[]string{"mcp-github"}, "mcp-github", true},
		{[]string{"mcp-other"}, "mcp-github", false},
	} {
		if got := ToolsetSelected(tc.list, tc.ts); got != tc.want {
			t.Errorf("ToolsetSelected(%q, %s) = %v", tc.list, tc.ts, got)
		}
	}
	if unknown, _ := NewRegistry().CheckToolsets([]string{"mcp", "mcp-github"}); len(unknown) != 0 {
		t.Fatalf("MCP toolsets reported unknown: %v", unknown)
	}
}

// Toolsets set while the registry is read (MCP servers connecting during
// a model call) leave every reader a whole set.
func TestRegistrySetToolsetConcurrent(t *testing.T) {
	r := NewRegistry()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			r.SetToolset("mcp-x", []Tool{fakeTool{name: "mcp__x__a", set: "mcp-x"}, fakeTool{name: "mcp__x__b", set: "mcp-x"}})
			r.RemoveToolset("mcp-x")
		}
	}()
	for i := 0; i < 200; i++ {
		if n := len(r.Specs()); n != 0 && n != 2 {
			t.Fatalf("saw %d tools", n)
		}
	}
	<-done
	c := r.Clone()
	r.Add(fakeTool{name: "only_in_r", set: "x"})
	if _, ok := c.Get("only_in_r"); ok {
		t.Fatal("clone shares its map")
	}
}

type fakeTool struct{ name, set string }

func (f fakeTool) Spec() llm.ToolSpec               { return llm.ToolSpec{Name: f.name} }
func (f fakeTool) Toolset() string                  { return f.set }
func (f fakeTool) Parallel() bool                   { return true }
func (f fakeTool) Run(context.Context, Call) Result { return Result{} }

func TestLegacyMCPNameResolves(t *testing.T) {
	r := NewRegistry(fakeTool{name: "mcp__github__create_issue", set: "mcp-github"})
	if tl, ok := r.Get("mcp_github_create_issue"); !ok || tl.Spec().Name != "mcp__github__create_issue" {
		t.Fatalf("legacy name not resolved: %v", ok)
	}
	if _, ok := r.Get("mcp_github_delete_repo"); ok {
		t.Fatal("unknown legacy name resolved")
	}
}
