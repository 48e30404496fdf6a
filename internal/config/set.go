package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"
)

// SecretEnvName is the .env variable that holds the secret of a dotted
// config key: "model.api_key" → "MODEL_API_KEY". Set stores the secret
// there and writes "${MODEL_API_KEY}" into config.yaml.
func SecretEnvName(key string) string {
	return strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Set writes one key to HERMES_HOME. value is parsed as one YAML value
// ("2" is a number, "[a, b]" a list; text for a string key is kept as
// typed).
//
//   - An environment variable name (upper case, e.g. OPENAI_API_KEY,
//     OPENAI_BASE_URL) goes to .env.
//   - A dotted config key (e.g. terminal.timeout) goes to config.yaml,
//     keeping comments and all other keys; a secret config key (e.g.
//     model.api_key) is stored in .env as SecretEnvName(key) and config.yaml
//     gets the reference "${MODEL_API_KEY}".
//
// Unknown keys, sections and values of the wrong type return an *Error
// naming the key (with a suggestion or the expected type) and nothing is
// written. A config.yaml that does not parse is left untouched and its
// *Error returned. Both files are replaced atomically; .env has mode 0600.
func Set(home, key, value string) error {
	return withLock(home, func() error { return set(home, key, value) })
}

func set(home, key, value string) error {
	if IsSecretKey(key) && strings.TrimSpace(value) == "" {
		return &Error{Key: key, Msg: "an empty value is not saved (it would hide the key from the environment); " +
			"give the secret, or remove it with `hermes config unset " + key + "`"}
	}
	s := newSchema()
	if IsEnvKey(key) {
		if err := s.checkEnvOverride(key, value); err != nil {
			return err
		}
		_, err := setDotEnv(DotEnvPath(home), key, &value)
		return err
	}
	f, err := s.settable(key)
	if err != nil {
		return err
	}
	n, err := parseValue(value)
	if err != nil {
		return &Error{Key: key, Msg: err.Error()}
	}
	if f.typ.Kind() == reflect.String && n.Kind != yaml.ScalarNode {
		n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	}
	decoded := reflect.New(f.typ)
	if err := decodeStrict(n, f.typ, decoded.Interface()); err != nil {
		return &Error{Key: f.key, Msg: fmt.Sprintf("expected %s, got %s", typeName(f.typ), describeNode(n))}
	}
	if err := checkValue(f.key, decoded.Elem()); err != nil {
		return err
	}
	path := ConfigPath(home)
	doc, prefix, err := readForEdit(path)
	if err != nil {
		return err
	}
	if IsSecretKey(f.key) && f.typ.Kind() == reflect.String && value != "" && !isWholeVarRef(value) {
		name := SecretEnvName(f.key)
		if _, err := setDotEnv(DotEnvPath(home), name, &value); err != nil {
			return err
		}
		n = &yaml.Node{Kind: yaml.ScalarNode, Value: "${" + name + "}"}
	}
	if err := setIn(doc.Content[0], "", strings.Split(f.key, "."), n); err != nil {
		return &Error{Path: path, Key: f.key, Msg: err.Error()}
	}
	return writeConfig(path, doc, prefix)
}

// Unset removes one key: an environment variable name from .env, a dotted
// key from config.yaml (so the lower layers apply again; empty parent
// sections are removed too). For a secret key (model.api_key) the .env
// variable that holds it (SecretEnvName: MODEL_API_KEY) is removed as well,
// whatever config.yaml held. A section (terminal, model, ...) is removed
// whole, with the .env variables of its secret keys. Removing a key that
// is not set is not an error; an unknown key is.
func Unset(home, key string) error {
	_, err := UnsetKey(home, key)
	return err
}

// UnsetKey is Unset that also reports whether anything was removed; when
// the key was not set it returns false and no file is written or created.
func UnsetKey(home, key string) (removed bool, err error) {
	if !IsEnvKey(key) {
		if _, err := newSchema().unsettable(key); err != nil {
			return false, err
		}
	}
	if !exists(ConfigPath(home)) && !exists(DotEnvPath(home)) {
		return false, nil
	}
	err = withLock(home, func() error {
		var err error
		removed, err = unset(home, key)
		return err
	})
	return removed, err
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func unset(home, key string) (bool, error) {
	if IsEnvKey(key) {
		return setDotEnv(DotEnvPath(home), key, nil)
	}
	sch := newSchema()
	f, err := sch.unsettable(key)
	if err != nil {
		return false, err
	}
	removed := false
	if path := ConfigPath(home); exists(path) {
		doc, prefix, err := readForEdit(path)
		if err != nil {
			return false, err
		}
		if unsetIn(doc.Content[0], "", strings.Split(f.key, ".")) != nil {
			if err := writeConfig(path, doc, prefix); err != nil {
				return false, err
			}
			removed = true
		}
	}
	for _, k := range sch.secretKeysOf(f) {
		changed, err := setDotEnv(DotEnvPath(home), SecretEnvName(k), nil)
		if err != nil {
			return removed, err
		}
		removed = removed || changed
	}
	return removed, nil
}

// unsettable resolves a key Unset takes: one settable key, or a section.
func (s schema) unsettable(key string) (field, error) {
	if f, ok := s.resolve(key); ok && f.section {
		return f, nil
	}
	f, err := s.settable(key)
	var e *Error
	if errors.As(err, &e) && strings.HasPrefix(e.Msg, "unknown key") {
		// unset takes sections too (hermes config unset terminal).
		e.Msg = "unknown key or section" + strings.TrimPrefix(e.Msg, "unknown key")
	}
	return f, err
}

// secretKeysOf returns the secret keys f holds: f itself, or a section's
// secret keys, sorted.
func (s schema) secretKeysOf(f field) []string {
	if !f.section {
		if IsSecretKey(f.key) {
			return []string{f.key}
		}
		return nil
	}
	var out []string
	for k, c := range s {
		if !c.section && strings.HasPrefix(k, f.key+".") && IsSecretKey(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// IsSection reports whether key names a section of config.yaml
// (terminal, model, ...) rather than one setting.
func IsSection(key string) bool {
	f, ok := newSchema().resolve(key)
	return ok && f.section
}

// Get returns the effective value of a dotted key (e.g. "terminal.timeout"
// → int 180), a section as its struct (e.g. "terminal" → TerminalConfig),
// or for an environment variable name its value (process environment, else
// .env; "" when unset). Secret values are returned as they are: mask them
// with MaskSecret before showing them. An unknown key returns an *Error
// with a suggestion.
func Get(l *Loaded, key string) (any, error) {
	if IsEnvKey(key) {
		return l.Getenv(key), nil
	}
	s := l.schema
	if s == nil {
		s = newSchema()
	}
	f, ok := s.resolve(key)
	if !ok {
		return nil, &Error{Key: key, Msg: s.unknownKeyMsg(key)}
	}
	v := reflect.ValueOf(l.Config).FieldByIndex(f.index)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	return v.Interface(), nil
}

// Keys lists every dotted leaf key this build reads from config.yaml,
// sorted.
func Keys() []string {
	var out []string
	for k, f := range newSchema() {
		if !f.section {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// settable resolves key for Set/Unset, refusing unknown keys, Hermes keys
// this build ignores and sections.
func (s schema) settable(key string) (field, error) {
	f, ok := s.resolve(key)
	if !ok {
		if isHermesOnly(key) {
			return field{}, &Error{Key: key, Msg: "a Hermes setting this build does not use; not saved"}
		}
		return field{}, &Error{Key: key, Msg: s.unknownKeyMsg(key)}
	}
	if f.section {
		var children []string
		for k, c := range s {
			if strings.HasPrefix(k, f.key+".") && !c.section {
				children = append(children, k)
			}
		}
		sort.Strings(children)
		example := ""
		if len(children) > 0 {
			example = ", e.g. " + children[0]
		}
		return field{}, &Error{Key: key, Msg: "is a section; set one of its keys" + example}
	}
	return f, nil
}

// checkEnvOverride checks the value of a variable that overrides a config
// key (TERMINAL_ENV → terminal.backend, HERMES_MAX_ITERATIONS →
// agent.max_turns, ...) as Set checks the key itself; the *Error names both.
func (s schema) checkEnvOverride(name, value string) error {
	for _, o := range s.envOverrides() {
		if o.name != name || value == "" {
			continue
		}
		v, ok := o.value(value)
		f := s[o.key]
		if !ok || f.typ.Kind() == reflect.Slice {
			return nil
		}
		decoded := reflect.New(f.typ)
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: v}
		if err := decodeStrict(n, f.typ, decoded.Interface()); err != nil {
			return &Error{Key: name, Msg: fmt.Sprintf("overrides %s, which expects %s, got %q", o.key, typeName(f.typ), value)}
		}
		if err := checkValue(o.key, decoded.Elem()); err != nil {
			return &Error{Key: name, Msg: "overrides " + err.Error()}
		}
	}
	return nil
}

func isWholeVarRef(v string) bool {
	loc := varRef().FindStringIndex(v)
	return loc != nil && loc[0] == 0 && loc[1] == len(v)
}

// readForEdit parses config.yaml for an edit. A missing or empty file gives
// an empty mapping; prefix is then the file's original text (comments) to
// keep above the new content. A file that does not parse is an error.
func readForEdit(path string) (doc *yaml.Node, prefix string, err error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", readError(path, err)
	}
	doc, err = parseDocument(path, b)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.Msg += "; fix it or remove it before changing settings"
		}
		return nil, "", err
	}
	if doc == nil || isNull(doc.Content[0]) {
		return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}, string(b), nil
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, "", &Error{Path: path, Line: doc.Content[0].Line, Msg: "the file must be a mapping of keys; fix it before changing settings"}
	}
	return doc, "", nil
}

// writeConfig writes doc (after prefix text) to path atomically, its
// mappings in block style (one key a line, so that line numbers in errors
// point somewhere: a file read as "{}" would otherwise grow as one flow
// line); an empty mapping is written as nothing rather than "{}".
func writeConfig(path string, doc *yaml.Node, prefix string) error {
	blockStyle(doc)
	var out []byte
	if root := doc.Content[0]; root.Kind != yaml.MappingNode || len(root.Content) > 0 ||
		root.HeadComment != "" || root.LineComment != "" || root.FootComment != "" || doc.HeadComment != "" || doc.FootComment != "" {
		var err error
		if out, err = yaml.Dump(doc, yaml.WithIndent(2)); err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
	}
	if strings.TrimSpace(prefix) != "" {
		if !strings.HasSuffix(prefix, "\n") {
			prefix += "\n"
		}
		out = append([]byte(prefix), out...)
	}
	return writeFileAtomic(path, out, 0o600)
}

// blockStyle clears the flow style of every mapping in n, and of every
// sequence holding a mapping; flow lists of scalars ([a, b]) stay.
func blockStyle(n *yaml.Node) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		n.Style &^= yaml.FlowStyle
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.MappingNode {
				n.Style &^= yaml.FlowStyle
			}
		}
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// lookupKey returns the index of key's key node in mapping m, also
// accepting the aliases of full (the dotted form of key), or -1.
func lookupKey(m *yaml.Node, prefix, key string) int {
	names := []string{key}
	for alias, target := range keyAliases {
		if target == prefix+key && strings.HasPrefix(alias, prefix) && !strings.Contains(alias[len(prefix):], ".") {
			names = append(names, alias[len(prefix):])
		}
	}
	for _, name := range names {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == name {
				return i
			}
		}
	}
	return -1
}

// setIn sets the value at path segs below mapping m to val, creating
// sections as needed and turning the `model: "name"` shorthand into a
// section when another model key is set.
func setIn(m *yaml.Node, prefix string, segs []string, val *yaml.Node) error {
	i := lookupKey(m, prefix, segs[0])
	if len(segs) == 1 {
		if i < 0 {
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: segs[0]}, val)
			return nil
		}
		old := m.Content[i+1]
		val.LineComment, val.HeadComment, val.FootComment = old.LineComment, old.HeadComment, old.FootComment
		m.Content[i+1] = val
		return nil
	}
	if i < 0 {
		child := &yaml.Node{Kind: yaml.MappingNode}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: segs[0]}, child)
		return setIn(child, prefix+segs[0]+".", segs[1:], val)
	}
	child := resolveAlias(m.Content[i+1])
	switch {
	case child.Kind == yaml.MappingNode:
	case prefix+segs[0] == "model" && child.Kind == yaml.ScalarNode && !isNull(child):
		if len(segs) == 2 && segs[1] == "default" {
			val.LineComment = child.LineComment
			m.Content[i+1] = val
			return nil
		}
		shorthand := &yaml.Node{Kind: yaml.ScalarNode, Value: child.Value, Style: child.Style, Tag: child.Tag}
		child = &yaml.Node{Kind: yaml.MappingNode, LineComment: child.LineComment,
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "default"}, shorthand}}
		m.Content[i+1] = child
	case isNull(child):
		child = &yaml.Node{Kind: yaml.MappingNode, LineComment: child.LineComment}
		m.Content[i+1] = child
	default:
		return fmt.Errorf("%s in config.yaml (line %d) is %s, not a section; fix it first", prefix+segs[0], child.Line, kindName(child))
	}
	return setIn(child, prefix+segs[0]+".", segs[1:], val)
}

// unsetIn removes the value at path segs below mapping m and returns it, or
// nil when it was not set. Sections left empty are removed.
func unsetIn(m *yaml.Node, prefix string, segs []string) *yaml.Node {
	i := lookupKey(m, prefix, segs[0])
	if i < 0 {
		return nil
	}
	child := resolveAlias(m.Content[i+1])
	var removed *yaml.Node
	switch {
	case len(segs) == 1:
		removed = child
	case prefix+segs[0] == "model" && child.Kind == yaml.ScalarNode:
		if len(segs) == 2 && segs[1] == "default" {
			removed = child
		}
	case child.Kind == yaml.MappingNode:
		removed = unsetIn(child, prefix+segs[0]+".", segs[1:])
		if removed != nil && len(child.Content) > 0 {
			return removed
		}
	}
	if removed != nil {
		// The head comment of the file's first key is usually about the
		// whole file: hand it on to the next key.
		if hc := m.Content[i].HeadComment; prefix == "" && i == 0 && hc != "" && len(m.Content) > 2 {
			next := m.Content[2]
			next.HeadComment = strings.TrimSpace(hc + "\n" + next.HeadComment)
		}
		m.Content = append(m.Content[:i], m.Content[i+2:]...)
	}
	return removed
}
