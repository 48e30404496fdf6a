package config

import (
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"
)

// varRef matches ${NAME} and ${env:NAME}.
var varRef = lazyregexp.New(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandVars replaces ${NAME} / ${env:NAME} in s with lookup(NAME); a name
// whose value is empty is left as written and returned in missing.
func expandVars(s string, lookup func(string) string) (out string, missing []string) {
	out = varRef().ReplaceAllStringFunc(s, func(m string) string {
		name := varRef().FindStringSubmatch(m)[1]
		if v := lookup(name); v != "" {
			return v
		}
		missing = append(missing, name)
		return m
	})
	return out, missing
}

// envOverride maps an environment variable onto a dotted key.
type envOverride struct {
	name string
	key  string
	// value converts the variable's text; ok=false ignores it.
	value func(string) (v string, ok bool)
}

// envOverrides lists the environment variables Hermes documents as
// overrides ("environment-variables.md") that map onto Config:
// HERMES_INFERENCE_MODEL (model.default), TERMINAL_ENV (terminal.backend),
// TERMINAL_<KEY> for every other terminal key (lists comma-separated),
// HERMES_MAX_ITERATIONS (agent.max_turns) and HERMES_YOLO_MODE (a true
// value sets approvals.mode to off).
func (s schema) envOverrides() []envOverride {
	same := func(v string) (string, bool) { return v, true }
	out := []envOverride{
		{"HERMES_INFERENCE_MODEL", "model.default", same},
		{"TERMINAL_ENV", "terminal.backend", same},
		{"HERMES_MAX_ITERATIONS", "agent.max_turns", same},
		{"HERMES_YOLO_MODE", "approvals.mode", func(v string) (string, bool) { return "off", truthy(v) }},
	}
	var terminal []string
	for k, f := range s {
		rest, ok := strings.CutPrefix(k, "terminal.")
		if ok && !f.section && !strings.Contains(rest, ".") && rest != "backend" {
			terminal = append(terminal, rest)
		}
	}
	sort.Strings(terminal)
	for _, rest := range terminal {
		out = append(out, envOverride{"TERMINAL_" + strings.ToUpper(rest), "terminal." + rest, same})
	}
	return out
}

// applyEnv overlays the environment overrides (process environment first,
// then .env) on the defaults; unusable values become warnings.
func (l *Loaded) applyEnv() {
	for _, o := range l.schema.envOverrides() {
		raw, from := l.getenv(o.name), "env "+o.name
		if raw == "" {
			raw, from = l.DotEnv[o.name], ".env "+o.name
		}
		if raw == "" {
			continue
		}
		v, ok := o.value(raw)
		if !ok {
			continue
		}
		f := l.schema[o.key]
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: v}
		if f.typ.Kind() == reflect.Slice {
			n = &yaml.Node{Kind: yaml.SequenceNode}
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: item})
				}
			}
		}
		if err := l.assign(f, n); err != nil {
			l.Warnings = append(l.Warnings, (&Error{Key: o.key, Msg: from + ": " + err.Error() + "; ignored"}).Error())
			continue
		}
		l.sources[o.key] = from
	}
}

// parseValue parses a command-line value as one YAML value: "2" is a
// number, "[a, b]" a list, "" an empty string.
func parseValue(value string) (*yaml.Node, error) {
	if strings.TrimSpace(value) == "" {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: yaml.DoubleQuotedStyle}, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil || len(doc.Content) == 0 {
		// Not valid YAML on its own (e.g. "a: b: c"): take it as a string.
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: yaml.DoubleQuotedStyle}, nil
	}
	n := doc.Content[0]
	n.Line, n.Column = 0, 0
	return n, nil
}
