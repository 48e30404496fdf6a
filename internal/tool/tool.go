// Package tool defines the model-facing tools of hermes and the registry that
// groups them into toolsets. Tool names and argument names follow Hermes
// Agent ("tools-reference.md"); each tool lives in its own file.
//
// A tool reports problems the model should see (bad arguments, a file that
// does not exist, a non-zero exit) as a Result with IsError set. A Go error
// is never returned from Run: infrastructure failures are also turned into
// an error Result, so the loop can go on.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/llm"
)

// Call is one invocation of a tool.
type Call struct {
	ID        string          // tool-call id from the model
	SessionID string          // session (task) the call belongs to
	Args      json.RawMessage // a JSON object; "" from the model is passed as {}
}

// Result is what the model sees for a call. Parts carries images (a
// screenshot) sent after Content to models that accept them.
type Result struct {
	Content string
	Parts   []llm.Part
	IsError bool
}

// Errorf builds an error Result.
func Errorf(format string, a ...any) Result {
	return Result{Content: fmt.Sprintf(format, a...), IsError: true}
}

// JSON builds a successful Result holding v encoded as indented JSON.
func JSON(v any) Result {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return Errorf("encoding result: %v", err)
	}
	return Result{Content: string(b)}
}

// Tool is a model-callable tool.
type Tool interface {
	// Spec is the name, description and JSON Schema shown to the model.
	Spec() llm.ToolSpec
	// Toolset is the toolset the tool belongs to (terminal, file, memory...).
	Toolset() string
	// Parallel reports whether calls to this tool may run concurrently with
	// other calls of the same model response.
	Parallel() bool
	// Run executes one call. It never panics on bad arguments.
	Run(ctx context.Context, call Call) Result
}

// Decode unmarshals call arguments into v, treating empty input as {}. The
// returned error message is meant for the model.
func Decode(args json.RawMessage, v any) error {
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %v; send a JSON object matching the tool's schema", err)
	}
	return nil
}

// Registry holds the tools available to a session, by name. It is safe
// for concurrent use: toolsets may be added and removed while a session
// runs (MCP servers connecting, changing their tool lists or dying); the
// model sees the tools registered when each model call starts.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
	// down maps a tool-name prefix ("mcp__<server>__") to why the tools
	// under it are missing (an MCP server that could not start).
	down map[string]string
}

// NewRegistry returns a registry holding tools; a later tool with the same
// name replaces an earlier one.
func NewRegistry(tools ...Tool) *Registry {
	r := &Registry{tools: map[string]Tool{}}
	for _, t := range tools {
		r.Add(t)
	}
	return r
}

// Add registers t under its spec name.
func (r *Registry) Add(t Tool) {
	r.mu.Lock()
	r.tools[t.Spec().Name] = t
	r.mu.Unlock()
}

// Clone returns a registry holding the same tools; adding to or removing
// from either leaves the other as it is.
func (r *Registry) Clone() *Registry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Registry{tools: make(map[string]Tool, len(r.tools)), down: maps.Clone(r.down)}
	for n, t := range r.tools {
		out.tools[n] = t
	}
	return out
}

// SetUnavailable records why the tools named prefix* are missing (reason
// "" forgets it); Unavailable reports it for a call of such a tool.
func (r *Registry) SetUnavailable(prefix, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reason == "" {
		delete(r.down, prefix)
		return
	}
	if r.down == nil {
		r.down = map[string]string{}
	}
	r.down[prefix] = reason
}

// Unavailable returns why the unregistered tool name is missing, when a
// SetUnavailable prefix covers it.
func (r *Registry) Unavailable(name string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for prefix, reason := range r.down {
		if strings.HasPrefix(name, prefix) {
			return reason, true
		}
	}
	return "", false
}

// SetToolset replaces every tool of toolset with tools (all of which
// must report that toolset), in one step: a model call sees the old set
// or the new one, never a mix.
func (r *Registry) SetToolset(toolset string, tools []Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, t := range r.tools {
		if t.Toolset() == toolset {
			delete(r.tools, n)
		}
	}
	for _, t := range tools {
		r.tools[t.Spec().Name] = t
	}
}

// RemoveToolset removes every tool of toolset.
func (r *Registry) RemoveToolset(toolset string) { r.SetToolset(toolset, nil) }

// Get returns the tool called name, resolving the legacy aliases Hermes
// renamed (process_manage → process, todo_list → todo, cronjob_manage →
// cronjob, mcp_<server>_<tool> → mcp__<server>__<tool>).
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if t, ok := r.tools[name]; ok {
		return t, true
	}
	if alias, ok := aliases[name]; ok {
		t, ok := r.tools[alias]
		return t, ok
	}
	if strings.HasPrefix(name, "mcp_") && !strings.HasPrefix(name, "mcp__") {
		// Hermes' older MCP naming, mcp_<server>_<tool>, for
		// mcp__<server>__<tool>.
		for n, t := range r.tools {
			if strings.HasPrefix(n, "mcp__") && strings.Replace(n, "__", "_", 2) == name {
				return t, true
			}
		}
	}
	return nil, false
}

var aliases = map[string]string{"process_manage": "process", "todo_list": "todo", "cronjob_manage": "cronjob"}

// Names returns the registered tool names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.names()
}

func (r *Registry) names() []string {
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Filter returns a registry with only the tools whose toolset is in
// toolsets. An empty list, "all" or "*" keeps every tool. Composite toolsets
// are expanded: "debugging" = terminal+file+web, "hermes-cli" = all.
func (r *Registry) Filter(toolsets []string) *Registry {
	want := map[string]bool{}
	for _, ts := range toolsets {
		ts = strings.TrimSpace(ts)
		switch ts {
		case "", "all", "*", "hermes-cli", "hermes-acp":
			return r
		case "debugging":
			want["terminal"], want["file"], want["web"] = true, true, true
		default:
			want[ts] = true
		}
	}
	if len(want) == 0 {
		return r
	}
	out := NewRegistry()
	r.mu.RLock()
	defer r.mu.RUnlock()
	out.down = maps.Clone(r.down)
	for _, t := range r.tools {
		if want[t.Toolset()] || want[t.Spec().Name] {
			out.Add(t)
		}
	}
	return out
}

// Without returns r without the tools whose toolset or name is in names
// (agent.disabled_toolsets); r itself when names removes nothing.
func (r *Registry) Without(names []string) *Registry {
	drop := map[string]bool{}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			drop[n] = true
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	hit := false
	for _, t := range r.tools {
		hit = hit || drop[t.Toolset()] || drop[t.Spec().Name]
	}
	if !hit {
		return r
	}
	out := &Registry{tools: map[string]Tool{}, down: maps.Clone(r.down)}
	for n, t := range r.tools {
		if !drop[t.Toolset()] && !drop[t.Spec().Name] {
			out.tools[n] = t
		}
	}
	return out
}

// ToolsetSelected reports whether toolset is enabled by a --toolsets /
// toolsets: list: an empty list, all, *, hermes-cli and hermes-acp enable
// every toolset; "mcp" enables every MCP server's toolset ("mcp-<server>").
func ToolsetSelected(toolsets []string, toolset string) bool {
	if len(toolsets) == 0 {
		return true
	}
	for _, ts := range toolsets {
		switch ts = strings.TrimSpace(ts); ts {
		case "all", "*", "hermes-cli", "hermes-acp", toolset:
			return true
		case "mcp":
			if strings.HasPrefix(toolset, "mcp-") {
				return true
			}
		}
	}
	return false
}

// Specs returns the specs of all tools, sorted by name (a stable order keeps
// the prompt prefix cacheable).
func (r *Registry) Specs() []llm.ToolSpec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]llm.ToolSpec, 0, len(r.tools))
	for _, n := range r.names() {
		out = append(out, r.tools[n].Spec())
	}
	return out
}

// unimplementedToolsets are Hermes Agent toolsets ("toolsets-reference.md")
// that hermes does not provide, or not on this machine (browser without a
// Chromium); naming one is a warning, not an error.
var unimplementedToolsets = map[string]bool{
	"web": true, "search": true, "browser": true, "image_gen": true, "video_gen": true,
	"tts": true, "clarify": true, "delegation": true,
	"messaging": true, "moa": true, "homeassistant": true, "kanban": true, "safe": true, "coding": true,
}

// CheckToolsets sorts the names given to --toolsets / toolsets: into
// unknown ones (neither a toolset, a composite, nor a tool name: an error
// for the caller to report) and Hermes toolsets this build does not have
// (a warning).
func (r *Registry) CheckToolsets(toolsets []string) (unknown, unavailable []string) {
	known := map[string]bool{"all": true, "*": true, "hermes-cli": true, "hermes-acp": true, "debugging": true}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for name, t := range r.tools {
		known[name], known[t.Toolset()] = true, true
	}
	for _, ts := range toolsets {
		ts = strings.TrimSpace(ts)
		switch {
		case ts == "" || known[ts]:
		case ts == "mcp" || strings.HasPrefix(ts, "mcp-"):
			// MCP toolsets appear when their servers connect, per session.
		case unimplementedToolsets[ts]:
			unavailable = append(unavailable, ts)
		default:
			unknown = append(unknown, ts)
		}
	}
	return unknown, unavailable
}

// Toolsets returns the toolsets of the registered tools, sorted.
func (r *Registry) Toolsets() []string {
	seen := map[string]bool{}
	var out []string
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, t := range r.tools {
		if !seen[t.Toolset()] {
			seen[t.Toolset()] = true
			out = append(out, t.Toolset())
		}
	}
	sort.Strings(out)
	return out
}
