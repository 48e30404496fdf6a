package approval

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Words computed at run time that the check cannot resolve are rendered with
// a "$" in them: "$NAME" for a variable, "$(...)" for a command
// substitution, "$?" for anything else (arithmetic, extended globs). A
// command word holding a "$" is a computed command word and needs approval.
// Each such rendering also holds dynamicMark, a NUL byte, which normalize
// removes from every command, so it cannot be spelled by the command itself.
const (
	dynamicMark  = "\x00"
	unknownSubst = "$(" + dynamicMark + "...)"
	unknownPart  = "$" + dynamicMark + "?"
)

// isDynamic reports whether a rendered word holds a part computed at run time.
func isDynamic(s string) bool { return strings.Contains(s, dynamicMark) }

// envVars are the variables a command may use for paths without assigning
// them; they render as "$NAME" and paths resolve them (see pathResolver).
// Any other unassigned variable is unknown.
var envVars = map[string]bool{"HOME": true, "HERMES_HOME": true, "PWD": true, "TMPDIR": true, "USER": true, "XDG_CONFIG_HOME": true}

// vars are the values a script assigns to its variables, collected before
// the script is walked. A variable assigned exactly one static value
// resolves to it; one assigned several values, or a value the check cannot
// evaluate (read, for over a computed list, arithmetic...), stays unknown.
type vars map[string]*varValues

type varValues struct {
	values  []string
	dynamic bool
}

func (v vars) set(name, value string, static bool) {
	e := v[name]
	if e == nil {
		e = &varValues{}
		v[name] = e
	}
	if !static {
		e.dynamic = true
		return
	}
	for _, x := range e.values {
		if x == value {
			return
		}
	}
	e.values = append(e.values, value)
}

// lookup returns the one static value of name.
func (v vars) lookup(name string) (string, bool) {
	e := v[name]
	if e == nil || e.dynamic || len(e.values) != 1 {
		return "", false
	}
	return e.values[0], true
}

// assigned reports whether the script assigns name at all.
func (v vars) assigned(name string) bool { return v[name] != nil }

// collectVars records every assignment in file: name=value (also as a
// command prefix and in declare/export/local/readonly), for loops, and the
// builtins that read into variables (read, mapfile, printf -v, getopts).
func collectVars(file *syntax.File) vars {
	v := vars{}
	r := &renderer{vars: vars{}} // values render without other variables
	assign := func(as *syntax.Assign) {
		if as.Name == nil {
			return
		}
		if as.Value == nil || as.Array != nil || as.Append || as.Index != nil {
			v.set(as.Name.Value, "", as.Naked)
			return
		}
		s, static := r.word(as.Value)
		v.set(as.Name.Value, s, static)
	}
	syntax.Walk(file, func(node syntax.Node) bool {
		switch n := node.(type) {
		case *syntax.CallExpr:
			for _, as := range n.Assigns {
				assign(as)
			}
			if len(n.Args) > 0 {
				readsInto(v, r, n.Args)
			}
		case *syntax.DeclClause:
			for _, as := range n.Args {
				assign(as)
			}
		case *syntax.ForClause:
			if it, ok := n.Loop.(*syntax.WordIter); ok && it.Name != nil {
				if len(it.Items) == 0 {
					v.set(it.Name.Value, "", false)
				}
				for _, w := range it.Items {
					s, static := r.word(w)
					v.set(it.Name.Value, s, static && !strings.ContainsAny(s, "*?[ "))
				}
			} else if n.Loop != nil {
				markArithmNames(v, n.Loop)
			}
		case *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.LetClause:
			markArithmNames(v, n)
		}
		return true
	})
	return v
}

// readsInto marks the variables read, mapfile, printf -v and getopts set.
func readsInto(v vars, r *renderer, args []*syntax.Word) {
	name, _ := r.word(args[0])
	var names []string
	switch path.Base(name) {
	case "read", "mapfile", "readarray":
		for _, w := range args[1:] {
			s, _ := r.word(w)
			if !strings.HasPrefix(s, "-") {
				names = append(names, s)
			}
		}
		names = append(names, "REPLY", "MAPFILE")
	case "printf":
		if len(args) < 3 {
			break
		}
		for i, w := range args[1 : len(args)-1] {
			if s, _ := r.word(w); s == "-v" {
				n, _ := r.word(args[i+2])
				names = append(names, n)
			}
		}
	case "getopts":
		if len(args) > 2 {
			n, _ := r.word(args[2])
			names = append(names, n)
		}
	}
	for _, n := range names {
		v.set(n, "", false)
	}
}

// markArithmNames marks variables assigned inside arithmetic as unknown.
func markArithmNames(v vars, node syntax.Node) {
	syntax.Walk(node, func(n syntax.Node) bool {
		if b, ok := n.(*syntax.BinaryArithm); ok {
			if w, ok := b.X.(*syntax.Word); ok && len(w.Parts) == 1 {
				if lit, ok := w.Parts[0].(*syntax.Lit); ok {
					v.set(lit.Value, "", false)
				}
			}
		}
		if u, ok := n.(*syntax.UnaryArithm); ok {
			if w, ok := u.X.(*syntax.Word); ok && len(w.Parts) == 1 {
				if lit, ok := w.Parts[0].(*syntax.Lit); ok {
					v.set(lit.Value, "", false)
				}
			}
		}
		return true
	})
}

// renderer turns words into strings after quote removal, resolving the
// script's own variables and trivial command substitutions ($(echo rm),
// `printf %s rm`, $(which rm)).
type renderer struct {
	vars vars
	// pick fixes, while fieldsEach renders one combination, the value of
	// each variable that has several static values.
	pick map[string]string
}

// multiValued returns the variables in w that have several static values
// (a for loop over constant words, assignments in branches).
func (r *renderer) multiValued(w *syntax.Word) []string {
	var names []string
	syntax.Walk(w, func(n syntax.Node) bool {
		switch p := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		case *syntax.ParamExp:
			if p.Param != nil {
				if e := r.vars[p.Param.Value]; e != nil && !e.dynamic && len(e.values) > 1 && !slices.Contains(names, p.Param.Value) {
					names = append(names, p.Param.Value)
				}
			}
		}
		return true
	})
	return names
}

// fieldsEach renders an argument word once for every combination of the
// static values its variables may have (`for f in a b; do touch $f.txt`
// checks a.txt and b.txt); more than maxBraceWords combinations make it a
// computed word.
func (r *renderer) fieldsEach(w *syntax.Word) []string {
	names := r.multiValued(w)
	if len(names) == 0 {
		return r.fields(w)
	}
	combos := 1
	for _, n := range names {
		combos *= len(r.vars[n].values)
		if combos > maxBraceWords {
			s, _ := r.word(w)
			return []string{s + dynamicMark}
		}
	}
	var out []string
	r.pick = map[string]string{}
	defer func() { r.pick = nil }()
	for i := range combos {
		k := i
		for _, n := range names {
			vals := r.vars[n].values
			r.pick[n] = vals[k%len(vals)]
			k /= len(vals)
		}
		out = append(out, r.fields(w)...)
	}
	return out
}

// word renders w; static is false when part of it could not be resolved.
func (r *renderer) word(w *syntax.Word) (s string, static bool) {
	var b strings.Builder
	static = true
	for _, part := range w.Parts {
		if !r.part(&b, part, false) {
			static = false
		}
	}
	return b.String(), static
}

// maxBraceWords bounds brace expansion; a word expanding to more is
// treated as computed at run time.
const maxBraceWords = 64

// fields renders w as the argument list it expands to: brace expansion,
// and field splitting of a word that is one unquoted expansion
// ($x, $(echo rm -rf)); an empty unquoted expansion yields no field.
func (r *renderer) fields(w *syntax.Word) []string {
	if hasBrace(w) {
		cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
		if syntax.SplitBraces(cp) {
			var out []string
			for x, err := range expand.BracesSeq(nil, cp) {
				if err != nil || len(out) == maxBraceWords {
					// too many to check one by one: a computed word
					s, _ := r.word(w)
					return []string{s + dynamicMark}
				}
				s, _ := r.word(x)
				out = append(out, s)
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	s, static := r.word(w)
	if len(w.Parts) == 1 && static {
		switch w.Parts[0].(type) {
		case *syntax.ParamExp, *syntax.CmdSubst:
			return r.split(s)
		}
	}
	return []string{s}
}

// split is field splitting by the script's IFS. A script that assigns
// IFS (IFS=_; c=rm_-rf_/x; $c runs rm) may split with the default or with
// any value it assigns, as a prefix (IFS= read) or for the rest of the
// script: the word is split when all of them agree, else it is computed.
// Empty fields from non-blank separators are dropped.
func (r *renderer) split(s string) []string {
	out := strings.Fields(s)
	e := r.vars["IFS"]
	if e == nil {
		return out
	}
	if e.dynamic {
		return []string{s + dynamicMark}
	}
	for _, ifs := range e.values {
		f := strings.FieldsFunc(s, func(c rune) bool { return strings.ContainsRune(ifs, c) })
		if !slices.Equal(f, out) {
			return []string{s + dynamicMark}
		}
	}
	return out
}

func hasBrace(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok && strings.Contains(lit.Value, "{") {
			return true
		}
	}
	return false
}

// part writes one word part and reports whether it was resolved.
func (r *renderer) part(b *strings.Builder, part syntax.WordPart, inDouble bool) bool {
	switch p := part.(type) {
	case *syntax.Lit:
		b.WriteString(unescape(p.Value, inDouble))
	case *syntax.SglQuoted:
		if p.Dollar {
			b.WriteString(ansiC(p.Value))
		} else {
			b.WriteString(p.Value)
		}
	case *syntax.DblQuoted:
		ok := true
		for _, q := range p.Parts {
			ok = r.part(b, q, true) && ok
		}
		return ok
	case *syntax.ParamExp:
		return r.param(b, p)
	case *syntax.CmdSubst:
		if v, ok := r.subst(p.Stmts); ok {
			b.WriteString(v)
			return true
		}
		b.WriteString(unknownSubst)
		return false
	case *syntax.ProcSubst:
		b.WriteString(unknownSubst)
		return false
	default:
		b.WriteString(unknownPart)
		return false
	}
	return true
}

func (r *renderer) param(b *strings.Builder, p *syntax.ParamExp) bool {
	if p.Param == nil {
		b.WriteString(unknownPart)
		return false
	}
	name := p.Param.Value
	simple := !p.Excl && !p.Length && !p.Width && p.Index == nil && p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil && p.NestedParam == nil
	if simple {
		if v, ok := r.pick[name]; ok {
			b.WriteString(v)
			return true
		}
		if v, ok := r.vars.lookup(name); ok {
			b.WriteString(v)
			return true
		}
		if envVars[name] && !r.vars.assigned(name) {
			b.WriteString("$" + name) // resolved by the path checks
			return true
		}
	}
	b.WriteString("$" + dynamicMark + name)
	return false
}

// subst resolves a command substitution that only prints constant text:
// echo WORDS, printf TEXT, printf %s WORDS, which NAME, command -v NAME.
func (r *renderer) subst(stmts []*syntax.Stmt) (string, bool) {
	if len(stmts) != 1 || len(stmts[0].Redirs) > 0 || stmts[0].Background {
		return "", false
	}
	call, ok := stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || len(call.Assigns) > 0 {
		return "", false
	}
	var args []string
	for _, w := range call.Args {
		s, static := r.word(w)
		if !static {
			return "", false
		}
		args = append(args, s)
	}
	switch args[0] {
	case "echo":
		if len(args) > 1 && strings.HasPrefix(args[1], "-") {
			return "", false
		}
		return strings.Join(args[1:], " "), true
	case "printf":
		if len(args) == 2 && !strings.ContainsAny(args[1], `%\`) {
			return args[1], true
		}
		if len(args) >= 2 && args[1] == "%s" {
			return strings.Join(args[2:], ""), true
		}
	case "which", "type":
		if len(args) == 2 && !strings.HasPrefix(args[1], "-") {
			return args[1], true
		}
	case "command":
		if len(args) == 3 && args[1] == "-v" {
			return args[2], true
		}
	}
	return "", false
}

// unescape removes backslash quoting: outside double quotes every `\x` is
// x; inside, only \$ \` \" \\ and backslash-newline are escapes.
func unescape(s string, inDouble bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			next := s[i+1]
			if !inDouble || strings.IndexByte("$`\"\\\n", next) >= 0 {
				if next != '\n' {
					b.WriteByte(next)
				}
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiC decodes the escapes of bash $'...' strings that matter for hiding
// command names: \xHH, \NNN (octal), \uHHHH, \UHHHHHHHH, \n, \t, \\, \', \".
func ansiC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; {
		case c == 'x':
			j := i + 1
			for j < len(s) && j < i+3 && isHex(s[j]) {
				j++
			}
			if v, err := strconv.ParseUint(s[i+1:j], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i = j - 1
			} else {
				b.WriteString(`\x`)
			}
		case c >= '0' && c <= '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 8)
			b.WriteByte(byte(v))
			i = j - 1
		case c == 'u' || c == 'U':
			j, limit := i+1, i+5
			if c == 'U' {
				limit = i + 9
			}
			for j < len(s) && j < limit && isHex(s[j]) {
				j++
			}
			if v, err := strconv.ParseUint(s[i+1:j], 16, 32); err == nil {
				b.WriteRune(rune(v))
				i = j - 1
			} else {
				b.WriteByte(c)
			}
		case c == 'n':
			b.WriteByte('\n')
		case c == 't':
			b.WriteByte('\t')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
