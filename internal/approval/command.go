package approval

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
)

// maxNesting bounds how deep `sh -c '...'`, eval and `echo ... | sh`
// bodies are parsed; deeper nesting is treated as unparseable.
const maxNesting = 4

// simpleCommand is one command the shell would run, after quote removal and
// after unwrapping launchers (sudo, env, nohup, timeout, nice, ...).
type simpleCommand struct {
	args []string // argv; expansions the check cannot evaluate stay as written ("$HOME", "$(...)")
	// subst lists the command names run inside $(...) or <(...) arguments.
	subst []string
}

// name is the base name of argv[0] ("/usr/bin/rm" → "rm").
func (c simpleCommand) name() string {
	if len(c.args) == 0 {
		return ""
	}
	return path.Base(c.args[0])
}

// analysis is what the checks know about a command line.
type analysis struct {
	normalized string
	parsed     bool // false when the quoting could not be parsed
	commands   []simpleCommand
	redirects  []string // targets of output redirections (>, >>, &>, >|, <>)
	// texts are the strings deny globs are matched against: the whole
	// normalized command, each sub-command as written and each unwrapped argv.
	texts []string
	// pipes are the commands on each side of every `|`.
	pipes    []pipe
	forkBomb bool
}

type pipe struct{ from, to []simpleCommand }

// analyze normalizes and parses command.
func analyze(command string) *analysis {
	a := &analysis{normalized: normalize(command)}
	a.texts = append(a.texts, a.normalized)
	a.parsed = a.parse(a.normalized, 0)
	return a
}

// ansiEscape matches terminal escape sequences (CSI and OSC).
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)`)

// normalize removes what hides a command from a reader but not from the
// shell: terminal escape sequences and NUL bytes; it maps fullwidth ASCII
// (U+FF01–U+FF5E, as NFKC does) to ASCII and other Unicode spaces to a
// plain space, then trims.
func normalize(command string) string {
	s := ansiEscape.ReplaceAllString(command, "")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == 0:
		case r >= 0xFF01 && r <= 0xFF5E:
			b.WriteRune(r - 0xFEE0)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		case unicode.Is(unicode.Cf, r): // zero-width and format characters
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}

// parse adds the commands of src to a; it reports false when src cannot be
// parsed as bash.
func (a *analysis) parse(src string, depth int) bool {
	if depth > maxNesting {
		return false
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return false
	}
	ok := true
	syntax.Walk(file, func(node syntax.Node) bool {
		switch n := node.(type) {
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				switch r.Op {
				case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
					if r.Word != nil {
						a.redirects = append(a.redirects, wordString(r.Word))
					}
				}
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				return true
			}
			a.texts = append(a.texts, strings.TrimSpace(src[n.Pos().Offset():n.End().Offset()]))
			cmd := a.callCommand(n)
			if len(cmd.args) == 0 {
				return true
			}
			a.commands = append(a.commands, cmd)
			a.texts = append(a.texts, strings.Join(cmd.args, " "))
			if body, isScript := shellScript(cmd.args); isScript {
				ok = a.parse(body, depth+1) && ok
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				p := pipe{from: a.stmtCommands(n.X), to: a.stmtCommands(n.Y)}
				a.pipes = append(a.pipes, p)
				// `echo 'rm -rf /' | sh` runs the echoed text.
				if len(p.to) > 0 && isShell(p.to[0].name()) && !hasScriptOperand(p.to[0].args) {
					for _, from := range p.from {
						if from.name() == "echo" || from.name() == "printf" {
							ok = a.parse(strings.Join(from.args[1:], " "), depth+1) && ok
						}
					}
				}
			}
		case *syntax.FuncDecl:
			if n.Name != nil && isForkBomb(n.Name.Value, n.Body) {
				a.forkBomb = true
			}
		}
		return true
	})
	return ok
}

// callCommand renders and unwraps a call.
func (a *analysis) callCommand(call *syntax.CallExpr) simpleCommand {
	var cmd simpleCommand
	for _, w := range call.Args {
		cmd.args = append(cmd.args, wordString(w))
		syntax.Walk(w, func(node syntax.Node) bool {
			var stmts []*syntax.Stmt
			switch n := node.(type) {
			case *syntax.CmdSubst:
				stmts = n.Stmts
			case *syntax.ProcSubst:
				stmts = n.Stmts
			}
			for _, s := range stmts {
				for _, c := range a.stmtCommands(s) {
					cmd.subst = append(cmd.subst, c.name())
				}
			}
			return true
		})
	}
	cmd.args = unwrap(cmd.args)
	return cmd
}

// stmtCommands lists the unwrapped simple commands inside s, in order.
func (a *analysis) stmtCommands(s *syntax.Stmt) []simpleCommand {
	var out []simpleCommand
	syntax.Walk(s, func(node syntax.Node) bool {
		if call, ok := node.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			out = append(out, simpleCommand{args: unwrap(renderArgs(call.Args))})
		}
		return true
	})
	return out
}

func renderArgs(words []*syntax.Word) []string {
	out := make([]string, 0, len(words))
	for _, w := range words {
		out = append(out, wordString(w))
	}
	return out
}

// wordString returns the word after quote removal. Parameter expansions
// stay as "$NAME", command substitutions as "$(...)"; the check treats them
// as unknown text.
func wordString(w *syntax.Word) string {
	var b strings.Builder
	for _, part := range w.Parts {
		writePart(&b, part, false)
	}
	return b.String()
}

func writePart(b *strings.Builder, part syntax.WordPart, inDouble bool) {
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
		for _, q := range p.Parts {
			writePart(b, q, true)
		}
	case *syntax.ParamExp:
		if p.Param != nil {
			b.WriteString("$" + p.Param.Value)
		} else {
			b.WriteString("$?")
		}
	case *syntax.CmdSubst, *syntax.ProcSubst:
		b.WriteString("$(...)")
	default:
		b.WriteString("$?")
	}
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
// command names: \xHH, \NNN (octal), \n, \t, \\, \', \".
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

// launcherOptionsWithValue lists, per launcher, the options that take a
// separate value (sudo -u USER, timeout -s SIG, ...).
var launcherOptionsWithValue = map[string]string{
	"sudo":    "-u -g -h -p -C -D -r -t -U -T",
	"doas":    "-u -C",
	"env":     "-u -C -S --unset --chdir",
	"timeout": "-s -k --signal --kill-after",
	"nice":    "-n --adjustment",
	"ionice":  "-c -n -p -t",
	"stdbuf":  "-i -o -e",
	"chroot":  "--userspec --groups",
}

// unwrap strips launcher commands that run their arguments as a command:
// sudo, doas, env (with NAME=value), nohup, timeout DURATION, nice, ionice,
// stdbuf, setsid, command, builtin, exec, time, chrt, taskset are removed
// with their options.
func unwrap(args []string) []string {
	for len(args) > 0 {
		name := path.Base(args[0])
		switch name {
		case "sudo", "doas", "env", "nohup", "timeout", "nice", "ionice", "stdbuf", "setsid", "command", "builtin", "exec", "time", "chrt", "taskset", "unbuffer":
		default:
			return args
		}
		withValue := strings.Fields(launcherOptionsWithValue[name])
		i := 1
		for i < len(args) {
			arg := args[i]
			if arg == "--" {
				i++
				break
			}
			if name == "env" && strings.Contains(arg, "=") && !strings.HasPrefix(arg, "-") {
				i++
				continue
			}
			if !strings.HasPrefix(arg, "-") || arg == "-" {
				break
			}
			i++
			for _, opt := range withValue {
				if arg == opt {
					i++ // skip the option's value
				}
			}
		}
		switch name {
		case "timeout": // DURATION
			i++
		case "chrt", "taskset": // priority / mask
			i++
		}
		if i >= len(args) {
			return nil
		}
		args = args[i:]
	}
	return args
}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true, "busybox": true}

func isShell(name string) bool { return shells[name] }

// isInterpreter reports shells and script interpreters that run what they read.
func isInterpreter(name string) bool {
	if isShell(name) || name == "source" || name == "." {
		return true
	}
	for _, p := range []string{"python", "perl", "ruby", "node", "php"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// shellScript returns the script of `sh -c SCRIPT` (also -lc, -ec...) and
// of `eval ARGS...`.
func shellScript(args []string) (string, bool) {
	name := path.Base(args[0])
	if name == "eval" {
		return strings.Join(args[1:], " "), len(args) > 1
	}
	if !isShell(name) {
		return "", false
	}
	for i := 1; i < len(args)-1; i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") || strings.HasPrefix(arg, "--") {
			continue
		}
		if strings.Contains(arg[1:], "c") {
			return args[i+1], true
		}
	}
	return "", false
}

// hasScriptOperand reports whether a shell invocation names a script file
// or -c, i.e. does not read its script from stdin.
func hasScriptOperand(args []string) bool {
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			return true
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a[1:], "c") {
			return true
		}
	}
	return false
}

// isForkBomb reports a function that runs itself in a pipeline or in the
// background: `:(){ :|:& };:` and its renamed forms.
func isForkBomb(name string, body *syntax.Stmt) bool {
	calls := func(s *syntax.Stmt) bool {
		found := false
		syntax.Walk(s, func(node syntax.Node) bool {
			if c, ok := node.(*syntax.CallExpr); ok && len(c.Args) > 0 && wordString(c.Args[0]) == name {
				found = true
			}
			return !found
		})
		return found
	}
	bomb := false
	syntax.Walk(body, func(node syntax.Node) bool {
		switch n := node.(type) {
		case *syntax.BinaryCmd:
			if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && (calls(n.X) || calls(n.Y)) {
				bomb = true
			}
		case *syntax.Stmt:
			if n.Background && calls(n) {
				bomb = true
			}
		}
		return !bomb
	})
	return bomb
}
