package mcp

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermes-go/hermes/internal/approval"
	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/mcp/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// server-everything over streamable HTTP, and over SSE through the
// fallback (the same url: entry; the endpoint does not speak streamable HTTP).
func TestEverythingOverHTTPAndSSE(t *testing.T) {
	for _, mode := range []string{"streamableHttp", "sse"} {
		t.Run(mode, func(t *testing.T) {
			url := mcptest.EverythingHTTP(t, mode)
			srv := config.MCPServer{URL: url, Headers: map[string]string{"X-Api-Key": "hdr-secret-123456"}, ConnectTimeout: 30, Timeout: 30}
			m, reg, _ := startManager(t, map[string]config.MCPServer{"web": srv}, nil)
			if st := m.Status(); !st[0].Up {
				t.Fatalf("not connected: %+v", st)
			}
			res := call(t, reg, "mcp__web__get_sum", `{"a":1,"b":2}`)
			if res.IsError || !strings.Contains(res.Content, "3") {
				t.Fatalf("get-sum: %+v", res)
			}
			res = call(t, reg, "mcp__web__read_resource", `{"uri":"demo://resource/static/document/architecture.md"}`)
			if res.IsError || res.Content == "" {
				t.Fatalf("read_resource: %+v", res)
			}
		})
	}
}

// An untrusted server's tools are denied headless, asked interactively,
// and allowed with --yolo.
func TestUntrustedServerNeedsApproval(t *testing.T) {
	ev := mcptest.Stdio(t, "mcp-server-everything")
	ev.Trust = config.MCPTrustUntrusted
	svc := approval.New(approval.Config{})
	_, reg, _ := startManager(t, map[string]config.MCPServer{"ev": ev}, func(o *Options) { o.Approvals = svc })
	res := call(t, reg, "mcp__ev__echo", `{"message":"hi"}`)
	if !res.IsError || !strings.Contains(res.Content, "nobody can approve") {
		t.Fatalf("headless: %+v", res)
	}
	var asked approval.Prompt
	detach := svc.Attach(approval.PrompterFunc(func(_ context.Context, p approval.Prompt) (approval.Answer, error) {
		asked = p
		return approval.Once, nil
	}))
	res = call(t, reg, "mcp__ev__echo", `{"message":"hi"}`)
	if res.IsError || !strings.Contains(res.Content, "hi") || asked.Tool != "mcp__ev__echo" || !strings.Contains(asked.Action, "untrusted MCP server ev") {
		t.Fatalf("interactive: %+v, prompt %+v", res, asked)
	}
	// Long arguments are cut for the prompt on a rune boundary (a 3-byte
	// "€" sits across byte 300 of the arguments).
	long := `{"message":"` + strings.Repeat("a", 300-len(`{"message":"`)-1) + strings.Repeat("€", 40) + `"}`
	if res := call(t, reg, "mcp__ev__echo", long); res.IsError {
		t.Fatalf("long arguments: %+v", res)
	}
	if !utf8.ValidString(asked.Path) || !strings.HasSuffix(asked.Path, "...") || len(asked.Path) > maxApprovalArgs+3 {
		t.Fatalf("prompt arguments = %q, want valid UTF-8 cut at %d bytes", asked.Path, maxApprovalArgs)
	}
	detach()
	svc.SetYolo(true)
	if res := call(t, reg, "mcp__ev__echo", `{"message":"yolo"}`); res.IsError {
		t.Fatalf("yolo: %+v", res)
	}
}

// Sampling is refused (not even advertised) unless sampling: true; then
// the server's request reaches the session's model.
func TestSamplingOnlyWhenEnabled(t *testing.T) {
	sampled := 0
	//lint:ignore SA1019 see SampleFunc
	var sample SampleFunc = func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		sampled++
		//lint:ignore SA1019 see SampleFunc
		return &sdk.CreateMessageResult{Content: &sdk.TextContent{Text: "sampled answer"}, Model: "fake", Role: "assistant"}, nil
	}
	off := mcptest.Stdio(t, "mcp-server-everything")
	on := mcptest.Stdio(t, "mcp-server-everything")
	on.Sampling.Enabled = true
	_, reg, ch := startManager(t, map[string]config.MCPServer{"off": off, "on": on}, func(o *Options) { o.Sample = sample })
	waitFor(t, "the conditional tools", func() bool { return ch.get("on") >= 2 && ch.get("off") >= 2 })
	if _, ok := reg.Get("mcp__off__trigger_sampling_request"); ok {
		t.Fatal("sampling offered to a server without sampling: true")
	}
	res := call(t, reg, "mcp__on__trigger_sampling_request", `{"prompt":"say something","maxTokens":50}`)
	if res.IsError || !strings.Contains(res.Content, "sampled answer") || sampled != 1 {
		t.Fatalf("sampling: %+v (sampled %d)", res, sampled)
	}
}

// An HTTP server that goes away mid-session fails the call with a tool
// error; once it is back, the next call reconnects.
func TestHTTPServerRestartedMidSessionRecovers(t *testing.T) {
	port := mcptest.FreePort(t)
	url, kill := mcptest.EverythingHTTPOn(t, "streamableHttp", port)
	srv := config.MCPServer{URL: url, ConnectTimeout: 10, Timeout: 10}
	_, reg, _ := startManager(t, map[string]config.MCPServer{"web": srv}, nil)
	if res := call(t, reg, "mcp__web__echo", `{"message":"before"}`); res.IsError {
		t.Fatalf("before: %+v", res)
	}
	kill()
	res := call(t, reg, "mcp__web__echo", `{"message":"while down"}`)
	if !res.IsError {
		t.Fatalf("a call to a dead server succeeded: %+v", res)
	}
	t.Logf("while down: %s", res.Content)
	mcptest.EverythingHTTPOn(t, "streamableHttp", port)
	waitFor(t, "the server to answer again", func() bool {
		res := call(t, reg, "mcp__web__echo", `{"message":"after"}`)
		return !res.IsError && strings.Contains(res.Content, "after")
	})
}
