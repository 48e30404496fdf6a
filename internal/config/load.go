package config

import (
	"errors"
	"fmt"
	"github.com/hermes-go/hermes/internal/protect"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/joho/godotenv"
	"go.yaml.in/yaml/v4"
)

// LoadOptions controls Load.
type LoadOptions struct {
	// IgnoreUserConfig skips config.yaml (--ignore-user-config); .env is
	// still read. HERMES_IGNORE_USER_CONFIG=1 and HERMES_SAFE_MODE=1 in the
	// environment have the same effect.
	IgnoreUserConfig bool
	// Getenv looks up the process environment (os.Getenv in production).
	// nil means an empty environment.
	Getenv func(string) string
}

// Source names of Loaded.Source.
const (
	SourceDefault = "default"
	SourceConfig  = "config.yaml"
	SourceFlag    = "flag"
)

// Loaded is a loaded configuration: defaults, overlaid by the environment
// and .env, overlaid by config.yaml (and later by flags via Override).
type Loaded struct {
	Config Config
	// Path is the config.yaml path (it may not exist).
	Path string
	// DotEnvPath is the .env path (it may not exist).
	DotEnvPath string
	// DotEnv holds the variables of HERMES_HOME/.env. The process
	// environment is never modified.
	DotEnv map[string]string
	// Warnings are problems that did not stop loading, each naming the
	// file, line and key: unknown keys (with a suggestion), ${VAR}
	// references to unset variables, unusable environment overrides.
	Warnings []string
	// UnknownKeys are the config.yaml keys neither this build nor Hermes
	// Agent knows (each also a warning); `config check` fails on them. A
	// key that is a close misspelling of a known key is an error instead.
	UnknownKeys []string
	// unknownWarnings are the Warnings about UnknownKeys (see
	// IsUnknownKeyWarning).
	unknownWarnings map[string]bool
	// Unimplemented are the config.yaml keys Hermes Agent knows that this
	// build ignores (summarised in one warning).
	Unimplemented []string

	getenv  func(string) string
	schema  schema
	sources map[string]string
	lines   map[string]int // config.yaml line of each key set there
}

// Getenv returns the process environment value of key, else its .env value
// (the process environment wins over .env for the same variable).
func (l *Loaded) Getenv(key string) string {
	if l.getenv != nil {
		if v := l.getenv(key); v != "" {
			return v
		}
	}
	return l.DotEnv[key]
}

// Source tells where the value of a dotted key came from: "default",
// "config.yaml", "flag", "env NAME" (process environment) or ".env NAME".
func (l *Loaded) Source(key string) string {
	if f, ok := l.schema.resolve(key); ok {
		key = f.key
	}
	if s, ok := l.sources[key]; ok {
		return s
	}
	return SourceDefault
}

// Where names key for a message about its value: "PATH:LINE: key" when
// config.yaml set it (like load errors), else "key (from SOURCE)".
func (l *Loaded) Where(key string) string {
	if f, ok := l.schema.resolve(key); ok {
		key = f.key
	}
	if line := l.lines[key]; line > 0 && l.Source(key) == SourceConfig {
		return fmt.Sprintf("%s:%d: %s", l.Path, line, key)
	}
	return fmt.Sprintf("%s (from %s)", key, l.Source(key))
}

// Override sets a dotted key from a command-line flag, the highest layer.
// value is parsed as YAML like Set ("2" is a number, "[a, b]" a list); a
// value of the wrong type returns an *Error naming the key.
func (l *Loaded) Override(key, value string) error {
	f, ok := l.schema.resolve(key)
	if !ok || f.section {
		return &Error{Key: key, Msg: l.schema.unknownKeyMsg(key)}
	}
	n, err := parseValue(value)
	if err != nil {
		return &Error{Key: key, Msg: err.Error()}
	}
	if err := l.assign(f, n); err != nil {
		return &Error{Key: f.key, Msg: err.Error()}
	}
	l.sources[f.key] = SourceFlag
	return nil
}

// Defaults returns the built-in defaults (Hermes "configuration.md"; box
// keys from the box design).
func Defaults() Config {
	t := true
	return Config{
		Terminal: TerminalConfig{Backend: "local", Cwd: ".", Timeout: 180, ContainerCPU: 1,
			ContainerMemory: 5120, ContainerDisk: 51200, ContainerPersistent: &t, LifetimeSeconds: 300,
			BoxImage: "host", BoxWorkspace: "bind", BoxPids: 1024, LocalSandbox: "workspace-write",
			ProtectedPaths: protect.Defaults()},
		Approvals:   ApprovalsConfig{Mode: "manual", Timeout: 300},
		Memory:      MemoryConfig{MemoryEnabled: &t, UserProfileEnabled: &t, MemoryCharLimit: 2200, UserCharLimit: 1375, NudgeInterval: 10},
		Skills:      SkillsConfig{CreationNudgeInterval: 10},
		Compression: CompressionConfig{Enabled: &t, Threshold: 0.5, TargetRatio: 0.2, ProtectFirstN: 3, ProtectLastN: 20},
		Auxiliary: AuxiliaryConfig{TitleGeneration: AuxTitleConfig{Timeout: AuxDefaultTimeout(AuxTitle)},
			Compression: AuxModelConfig{Timeout: AuxDefaultTimeout(AuxCompression)}, Vision: AuxModelConfig{Timeout: AuxDefaultTimeout(AuxVision)}},
	}
}

// ConfigPath is HERMES_HOME/config.yaml.
func ConfigPath(home string) string { return filepath.Join(home, "config.yaml") }

// DotEnvPath is HERMES_HOME/.env.
func DotEnvPath(home string) string { return filepath.Join(home, ".env") }

// Load reads HERMES_HOME/.env and config.yaml (unless opts.IgnoreUserConfig)
// over the defaults. Precedence (Hermes "configuration.md"): config.yaml >
// environment and .env > defaults; flags are applied afterwards with
// Override. Broken YAML and values of the wrong type return an *Error (or
// several joined with errors.Join) naming file, line and key; unknown keys
// only add a warning.
func Load(home string, opts LoadOptions) (*Loaded, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	l := &Loaded{
		Config: Defaults(), Path: ConfigPath(home), DotEnvPath: DotEnvPath(home),
		DotEnv: map[string]string{}, getenv: getenv, schema: newSchema(), sources: map[string]string{},
	}
	env, err := readDotEnv(l.DotEnvPath)
	if err != nil {
		return nil, err
	}
	l.DotEnv = env
	l.applyEnv()
	if opts.IgnoreUserConfig || truthy(getenv("HERMES_IGNORE_USER_CONFIG")) || truthy(getenv("HERMES_SAFE_MODE")) {
		return l, nil
	}
	b, err := os.ReadFile(l.Path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, readError(l.Path, err)
	}
	doc, err := parseDocument(l.Path, b)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return l, nil
	}
	d := &decoder{l: l}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		if isNull(root) {
			return l, nil
		}
		return nil, &Error{Path: l.Path, Line: root.Line, Msg: "the file must be a mapping of keys (e.g. \"model:\"), not " + kindName(root)}
	}
	d.walk(root, "")
	if n := len(l.Unimplemented); n > 0 {
		names := l.Unimplemented
		if n > 6 {
			names = append(names[:6:6], fmt.Sprintf("and %d more", n-6))
		}
		l.Warnings = append(l.Warnings, fmt.Sprintf("%s: %d Hermes Agent setting(s) this build does not implement are ignored: %s",
			l.Path, n, strings.Join(names, ", ")))
	}
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return l, nil
}

// readDotEnv parses a .env file without touching the process environment;
// a missing file is an empty map.
func readDotEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, readError(path, err)
	}
	defer f.Close()
	m, err := godotenv.Parse(f)
	if err != nil {
		return nil, &Error{Path: path, Msg: err.Error() + " (lines must look like NAME=value)"}
	}
	return m, nil
}

// parseDocument parses config.yaml text into its document node; nil for an
// empty file. Syntax errors become an *Error with the line and its text.
func parseDocument(path string, b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		e := &Error{Path: path, Msg: err.Error()}
		var le *yaml.LoadError
		if errors.As(err, &le) {
			e.Line = le.Mark.Line
			e.Msg = le.Message
			if lines := strings.Split(string(b), "\n"); e.Line > 0 && e.Line <= len(lines) {
				e.Msg += fmt.Sprintf(" near %q", strings.TrimSpace(lines[e.Line-1]))
			}
		}
		e.Msg = "invalid YAML: " + e.Msg + " (fix the syntax; nothing was loaded from this file)"
		return nil, e
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return &doc, nil
}

// IsUnknownKeyWarning reports whether w, one of l.Warnings, is the warning
// about a key of l.UnknownKeys; `config check` reports those as problems
// instead of warnings, so each is listed once.
func (l *Loaded) IsUnknownKeyWarning(w string) bool { return l.unknownWarnings[w] }

// decoder applies a config.yaml node tree to a Loaded.
type decoder struct {
	l    *Loaded
	errs []error
}

func (d *decoder) errorf(n *yaml.Node, key, format string, args ...any) {
	d.errs = append(d.errs, &Error{Path: d.l.Path, Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) warnf(n *yaml.Node, key, format string, args ...any) {
	d.l.Warnings = append(d.l.Warnings, (&Error{Path: d.l.Path, Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)}).Error())
}

// walk applies the keys of mapping n whose dotted prefix is prefix.
func (d *decoder) walk(n *yaml.Node, prefix string) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		full := prefix + k.Value
		if k.Value == "<<" {
			d.warnf(k, full, "YAML merge keys are not supported here; ignored")
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.errorf(k, full, "duplicate key (first at line %d); keep one of them", line)
			continue
		}
		seen[k.Value] = k.Line
		f, ok := d.l.schema.resolve(full)
		if !ok {
			switch {
			case isHermesOnly(full):
				if full != "_config_version" {
					d.l.Unimplemented = append(d.l.Unimplemented, full)
				}
			case d.l.schema.misspelling(full) != "":
				// A typo of a known key (terminl: for terminal:) must not
				// silently drop a setting such as the sandbox backend.
				d.errorf(k, full, "unknown key (did you mean %q?); fix the spelling", d.l.schema.misspelling(full))
			default:
				d.l.UnknownKeys = append(d.l.UnknownKeys, full)
				d.warnf(k, full, "%s; ignored", d.l.schema.unknownKeyMsg(full))
				if d.l.unknownWarnings == nil {
					d.l.unknownWarnings = map[string]bool{}
				}
				d.l.unknownWarnings[d.l.Warnings[len(d.l.Warnings)-1]] = true
			}
			continue
		}
		if _, isAlias := keyAliases[full]; isAlias {
			// The canonical key wins when both are present.
			if canon := strings.TrimPrefix(f.key, prefix); hasKey(n, canon) {
				continue
			}
		}
		if isNull(v) {
			continue // "key:" with no value keeps the lower layer, as in Hermes
		}
		if f.section {
			switch {
			case v.Kind == yaml.MappingNode:
				d.walk(v, f.key+".")
			case f.key == "model" && v.Kind == yaml.ScalarNode:
				// `model: "name"` is shorthand for model.default.
				d.leaf(d.l.schema["model.default"], v)
			default:
				d.errorf(v, f.key, "expected %s, got %s", typeName(f.typ), kindName(v))
			}
			continue
		}
		d.leaf(f, v)
	}
}

// leaf expands ${VAR} references in v and assigns it to f.
func (d *decoder) leaf(f field, v *yaml.Node) {
	if f.key == "mcp_servers" {
		d.checkMCPKeys(v)
	}
	d.expand(v, f.key)
	if err := d.l.assign(f, v); err != nil {
		d.errorf(v, f.key, "%v", err)
		return
	}
	d.l.sources[f.key] = SourceConfig
	if d.l.lines == nil {
		d.l.lines = map[string]int{}
	}
	d.l.lines[f.key] = v.Line
}

// expand substitutes ${VAR} and ${env:VAR} in the scalars of n from the
// environment and .env; unset variables are kept verbatim with a warning
// (Hermes "configuration.md"). Bare $VAR is not expanded.
func (d *decoder) expand(n *yaml.Node, key string) {
	switch n.Kind {
	case yaml.ScalarNode:
		out, missing := expandVars(n.Value, d.l.Getenv)
		for _, name := range missing {
			d.warnf(n, key, "${%s} is not set in the environment or .env; kept as written", name)
		}
		if out != n.Value && n.Style == 0 {
			n.Tag = "" // re-resolve a plain scalar: "${N}" may now be a number
		}
		n.Value = out
	case yaml.SequenceNode, yaml.MappingNode:
		for _, c := range n.Content {
			d.expand(c, key)
		}
	}
}

// assign decodes node n into field f of l.Config, or reports what type was
// expected.
func (l *Loaded) assign(f field, n *yaml.Node) error {
	target := reflect.New(f.typ)
	if err := decodeStrict(n, f.typ, target.Interface()); err != nil {
		return fmt.Errorf("expected %s, got %s", typeName(f.typ), describeNode(n))
	}
	reflect.ValueOf(&l.Config).Elem().FieldByIndex(f.index).Set(target.Elem())
	return nil
}

// decodeStrict decodes n into out (a pointer to a value of type t), refusing
// the conversions YAML would silently allow into a string field (a map or a
// list) and lists of non-scalars.
func decodeStrict(n *yaml.Node, t reflect.Type, out any) error {
	if t.Kind() == reflect.String && n.Kind != yaml.ScalarNode {
		return errors.New("not a scalar")
	}
	if t.Kind() == reflect.Slice && n.Kind != yaml.SequenceNode {
		return errors.New("not a list")
	}
	return n.Decode(out)
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || (n.Style == 0 && (n.Value == "" || n.Value == "~" || n.Value == "null")))
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return describeNode(n)
}

// describeNode shows a value for an error message, shortened.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return fmt.Sprintf("%q", v)
}

// truthy reports whether an environment value means yes ("1", "true",
// "yes", "on").
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
