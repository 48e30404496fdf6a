package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/tool"
)

// maxToolName is the longest tool name providers accept (OpenAI: 64).
const maxToolName = 64

// sanitize replaces every character outside [A-Za-z0-9_] with '_'.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// ToolName is the name the model sees for tool of server:
// mcp__<server>__<tool>, characters outside [A-Za-z0-9_] replaced by '_'
// (Hermes' naming). A name longer than 64 characters is cut and ends with
// a hash of the full name, so it stays unique.
func ToolName(server, tool string) string {
	n := toolPrefix(server) + sanitize(tool)
	if len(n) <= maxToolName {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:maxToolName-9] + "_" + hex.EncodeToString(sum[:4])
}

// toolPrefix is how every ToolName of server starts (before a long name's cut).
func toolPrefix(server string) string { return "mcp__" + sanitize(server) + "__" }

// Toolset is the toolset of a server's tools (Hermes: mcp-<server>).
func Toolset(server string) string { return "mcp-" + server }

// remoteTool is one tool of an MCP server, offered to the model.
type remoteTool struct {
	srv  *server
	name string // the server's own name
	spec llm.ToolSpec
}

func newRemoteTool(srv *server, t *sdk.Tool) *remoteTool {
	params, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil || string(params) == "null" {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if r := []rune(desc); len(r) > maxDescriptionChars {
		desc = string(r[:maxDescriptionChars]) + "…"
	}
	// A listing is server output like a result: the server's own env
	// and header secrets (and the process's) are removed before it reaches
	// the model, the provider and the cache on disk.
	desc = fmt.Sprintf("[MCP server %s] %s", srv.name, srv.m.redact(srv, desc))
	if red := srv.m.redact(srv, string(params)); red != string(params) {
		params = json.RawMessage(red)
		if !json.Valid(params) { // a secret's form spanned JSON syntax
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
	}
	return &remoteTool{srv: srv, name: t.Name, spec: llm.ToolSpec{Name: ToolName(srv.name, t.Name), Description: desc, Parameters: params}}
}

func (t *remoteTool) Spec() llm.ToolSpec { return t.spec }
func (t *remoteTool) Toolset() string    { return Toolset(t.srv.name) }
func (t *remoteTool) Parallel() bool     { return true }

func (t *remoteTool) Run(ctx context.Context, call tool.Call) tool.Result {
	var args map[string]any
	if err := tool.Decode(call.Args, &args); err != nil {
		return tool.Errorf("%v", err)
	}
	return t.srv.use(ctx, call, t.spec.Name, "call "+t.name, func(ctx context.Context, cs *sdk.ClientSession) tool.Result {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.name, Arguments: args})
		if err != nil {
			return t.srv.callError(err)
		}
		return callResult(res)
	})
}

// utilityTool is a resource or prompt helper of a server.
type utilityTool struct {
	srv    *server
	action string
	spec   llm.ToolSpec
	run    func(ctx context.Context, cs *sdk.ClientSession, args map[string]any) tool.Result
}

func (t *utilityTool) Spec() llm.ToolSpec { return t.spec }
func (t *utilityTool) Toolset() string    { return Toolset(t.srv.name) }
func (t *utilityTool) Parallel() bool     { return true }

func (t *utilityTool) Run(ctx context.Context, call tool.Call) tool.Result {
	var args map[string]any
	if err := tool.Decode(call.Args, &args); err != nil {
		return tool.Errorf("%v", err)
	}
	return t.srv.use(ctx, call, t.spec.Name, t.action, func(ctx context.Context, cs *sdk.ClientSession) tool.Result {
		return t.run(ctx, cs, args)
	})
}

// utilityTools returns list_resources/read_resource and
// list_prompts/get_prompt for a server that offers resources or prompts.
func utilityTools(srv *server, caps *sdk.ServerCapabilities) []tool.Tool {
	var out []tool.Tool
	if caps == nil {
		return nil
	}
	mk := func(name, action, desc, params string, run func(context.Context, *sdk.ClientSession, map[string]any) tool.Result) {
		out = append(out, &utilityTool{srv: srv, action: action, run: run, spec: llm.ToolSpec{
			Name: ToolName(srv.name, name), Description: fmt.Sprintf("[MCP server %s] %s", srv.name, desc), Parameters: json.RawMessage(params)}})
	}
	if caps.Resources != nil && enabled(srv.cfg.Tools.Resources) {
		mk("list_resources", "list resources", "List the resources (files, documents, data) the server offers, with their URIs.",
			`{"type":"object","properties":{}}`, listResources)
		mk("read_resource", "read a resource", "Read one resource of the server by its URI.",
			`{"type":"object","properties":{"uri":{"type":"string","description":"resource URI from list_resources"}},"required":["uri"]}`, readResource)
	}
	if caps.Prompts != nil && enabled(srv.cfg.Tools.Prompts) {
		mk("list_prompts", "list prompts", "List the prompt templates the server offers, with their arguments.",
			`{"type":"object","properties":{}}`, listPrompts)
		mk("get_prompt", "get a prompt", "Get a prompt template of the server filled with arguments.",
			`{"type":"object","properties":{"name":{"type":"string"},"arguments":{"type":"object","additionalProperties":{"type":"string"}}},"required":["name"]}`, getPrompt)
	}
	return out
}

func enabled(b *bool) bool { return b == nil || *b }

func listResources(ctx context.Context, cs *sdk.ClientSession, _ map[string]any) tool.Result {
	type entry struct {
		URI         string `json:"uri"`
		Name        string `json:"name,omitempty"`
		Description string `json:"description,omitempty"`
		MIMEType    string `json:"mimeType,omitempty"`
	}
	var out struct {
		Resources []entry `json:"resources"`
		Templates []entry `json:"templates,omitempty"`
	}
	out.Resources = []entry{}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return tool.Errorf("listing resources: %v", err)
		}
		out.Resources = append(out.Resources, entry{r.URI, r.Name, r.Description, r.MIMEType})
		if len(out.Resources) >= 500 {
			break
		}
	}
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			break // templates are optional
		}
		out.Templates = append(out.Templates, entry{r.URITemplate, r.Name, r.Description, r.MIMEType})
	}
	return tool.JSON(out)
}

func readResource(ctx context.Context, cs *sdk.ClientSession, args map[string]any) tool.Result {
	uri, _ := args["uri"].(string)
	if uri == "" {
		return tool.Errorf("uri is required: take one from list_resources")
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return tool.Errorf("reading %s: %v", uri, err)
	}
	var b strings.Builder
	for _, c := range res.Contents {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch {
		case c.Text != "":
			b.WriteString(c.Text)
		case len(c.Blob) > 0:
			fmt.Fprintf(&b, "[binary resource %s: %s, %d bytes]", c.URI, c.MIMEType, len(c.Blob))
		}
	}
	return tool.Result{Content: b.String()}
}

func listPrompts(ctx context.Context, cs *sdk.ClientSession, _ map[string]any) tool.Result {
	out := []*sdk.Prompt{}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			return tool.Errorf("listing prompts: %v", err)
		}
		out = append(out, p)
	}
	return tool.JSON(out)
}

func getPrompt(ctx context.Context, cs *sdk.ClientSession, args map[string]any) tool.Result {
	name, _ := args["name"].(string)
	if name == "" {
		return tool.Errorf("name is required: take one from list_prompts")
	}
	pargs := map[string]string{}
	if m, ok := args["arguments"].(map[string]any); ok {
		for k, v := range m {
			pargs[k] = fmt.Sprint(v)
		}
	}
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: pargs})
	if err != nil {
		return tool.Errorf("getting prompt %s: %v", name, err)
	}
	var b strings.Builder
	if res.Description != "" {
		b.WriteString(res.Description + "\n\n")
	}
	for _, m := range res.Messages {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, contentText(m.Content))
	}
	return tool.Result{Content: strings.TrimRight(b.String(), "\n")}
}

// callResult turns a tool call result into what the model reads: the text
// of every content block (images and audio described, not inlined), or
// the structured content as JSON when there is no content.
func callResult(res *sdk.CallToolResult) tool.Result {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return tool.Result{Content: strings.Join(parts, "\n"), IsError: res.IsError}
}

func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.ResourceLink:
		return fmt.Sprintf("[resource: %s %s]", c.URI, c.Name)
	case *sdk.EmbeddedResource:
		if c.Resource != nil && c.Resource.Text != "" {
			return c.Resource.Text
		}
		if c.Resource != nil {
			return fmt.Sprintf("[resource: %s, %s]", c.Resource.URI, c.Resource.MIMEType)
		}
	}
	b, _ := json.Marshal(c)
	return string(b)
}
