package config

import (
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"
	"go.yaml.in/yaml/v4"
)

// mcpHermesOnlyKeys are keys of a Hermes Agent mcp_servers entry
// (mcp-config-reference.md) that this build reads but does not act on.
// transport is absent: a url is tried as streamable HTTP, then as SSE.
var mcpHermesOnlyKeys = map[string]bool{
	"auth": true, "ssl_verify": true, "client_cert": true, "protocol": true,
	"supports_parallel_tool_calls": true, "keepalive_interval": true,
	"idle_timeout_seconds": true, "elicitation": true,
}

// checkMCPKeys reports the keys of the mcp_servers entries that no field
// reads. The entries are decoded as a whole, so without this a misspelled
// key (turst: untrusted, tools.exlude) would be dropped silently and the
// server would run with full trust or unfiltered tools. A misspelling of a
// known key is an error, as for the rest of config.yaml; a Hermes key
// this build ignores and any other unknown key are warnings.
func (d *decoder) checkMCPKeys(servers *yaml.Node) {
	if servers.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(servers.Content); i += 2 {
		name, entry := servers.Content[i].Value, resolveAlias(servers.Content[i+1])
		if entry.Kind != yaml.MappingNode {
			continue // assign reports the type
		}
		prefix := "mcp_servers." + name + "."
		d.checkKeys(entry, prefix, yamlKeys(reflect.TypeFor[MCPServer]()), true)
		for j := 0; j+1 < len(entry.Content); j += 2 {
			if v := resolveAlias(entry.Content[j+1]); entry.Content[j].Value == "tools" && v.Kind == yaml.MappingNode {
				d.checkKeys(v, prefix+"tools.", yamlKeys(reflect.TypeFor[MCPTools]()), false)
			}
		}
	}
}

// checkKeys reports the keys of mapping m (at prefix) not in known.
func (d *decoder) checkKeys(m *yaml.Node, prefix string, known []string, hermes bool) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if slices.Contains(known, k.Value) || (hermes && k.Value == "transport") {
			continue
		}
		full := prefix + k.Value
		switch sug := closest(k.Value, known); {
		case hermes && mcpHermesOnlyKeys[k.Value]:
			d.warnf(k, full, "a Hermes Agent setting this build does not support; ignored")
		case sug != "":
			d.errorf(k, full, "unknown key (did you mean %q?); fix the spelling", prefix+sug)
		default:
			d.warnf(k, full, "unknown key (known: %s); ignored", strings.Join(known, ", "))
		}
	}
}

// yamlKeys lists the yaml keys of struct type t, sorted.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

// closest returns the key of known within a small edit distance of key.
func closest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := levenshtein.ComputeDistance(key, k); d < bestDist && 2*d < len(key) {
			best, bestDist = k, d
		}
	}
	return best
}
