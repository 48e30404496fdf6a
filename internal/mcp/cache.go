package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/hermes-go/hermes/internal/config"
	"github.com/hermes-go/hermes/internal/llm"
	"github.com/hermes-go/hermes/internal/tool"
)

// cachedList is a server's last tool listing, kept in
// Options.CacheDir/<server>.json so that a server that fails to start
// still shows its tools: calling one tells the model why it is
// unavailable and retries the start. Only names, descriptions and
// schemas are kept, never env or header values.
type cachedList struct {
	// Key identifies the entry the listing came from (command, args or
	// url, filters); a changed entry ignores the old listing.
	Key   string         `json:"key"`
	Tools []llm.ToolSpec `json:"tools"`
	// Names are the servers' own tool names, by model-facing name.
	Names map[string]string `json:"names"`
}

// cacheKey hashes what decides a server's tool list.
func cacheKey(c config.MCPServer) string {
	b, _ := json.Marshal(struct {
		Command string
		Args    []string
		URL     string
		Tools   config.MCPTools
	}{c.Command, c.Args, c.URL, c.Tools})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (s *server) cachePath() string {
	if s.m.opts.CacheDir == "" {
		return ""
	}
	return filepath.Join(s.m.opts.CacheDir, sanitize(s.name)+".json")
}

// saveCache records the server's current tools (best effort).
func (s *server) saveCache(tools []tool.Tool) {
	p := s.cachePath()
	if p == "" {
		return
	}
	c := cachedList{Key: cacheKey(s.cfg), Names: map[string]string{}}
	for _, t := range tools {
		spec := t.Spec()
		c.Tools = append(c.Tools, spec)
		switch t := t.(type) {
		case *remoteTool:
			c.Names[spec.Name] = t.name
		case *utilityTool:
			c.Names[spec.Name] = "\x00" + t.action // utilities are rebuilt from the listing on connect
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(p), 0o700) == nil {
		_ = renameio.WriteFile(p, b, 0o600)
	}
}

// loadCache returns the server's remote tools from its last listing, or
// nil when there is none for the current entry.
func (s *server) loadCache() []tool.Tool {
	p := s.cachePath()
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var c cachedList
	if json.Unmarshal(b, &c) != nil || c.Key != cacheKey(s.cfg) {
		return nil
	}
	var out []tool.Tool
	for _, spec := range c.Tools {
		name, ok := c.Names[spec.Name]
		if !ok || strings.HasPrefix(name, "\x00") || spec.Name != ToolName(s.name, name) || !s.cfg.ToolAllowed(name) {
			continue
		}
		out = append(out, &remoteTool{srv: s, name: name, spec: spec})
	}
	return out
}
