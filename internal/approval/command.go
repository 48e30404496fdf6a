package approval

import (
	"github.com/hermes-go/hermes/internal/lazyregexp"
	"path"
	"slices"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
)

// maxNesting bounds how deep `sh -c '...'`, eval and `echo ... | sh`
// bodies are parsed; deeper nesting is treated as unparseable.
const maxNesting = 4

// simpleCommand is one command the shell would run, after quote removal,
// variable resolution and unwrapping launchers (sudo, env, nohup, timeout,
// nice, xargs, busybox...).
type simpleCommand struct {
	args []string // argv; expansions the check cannot evaluate hold a "$" ("$HOME", "$(...)")
	// subst lists the command names run inside $(...) or <(...) arguments.
	subst []string
	// via lists the launchers unwrapped, outermost first.
	via []string
	// dir is where the command runs.
	dir dirState
}

// name is the base name of argv[0] ("/usr/bin/rm" → "rm").
func (c simpleCommand) name() string {
	if len(c.args) == 0 {
		return ""
	}
	return baseName(c.args[0])
}

func baseName(s string) string { return path.Base(s) }

// target is an output redirection's path and where it was opened.
type target struct {
	path string
	dir  dirState
}

// analysis is what the checks know about a command line.
type analysis struct {
	normalized string
	parsed     bool // false when some part could not be parsed
	commands   []simpleCommand
	redirects  []target
	// texts are the strings deny globs are matched against: the whole
	// normalized command, each sub-command as written and the forms of
	// each unwrapped argv (see denyForms).
	texts []string
	// pipes are the commands on each side of every `|`.
	pipes    []pipe
	forkBomb bool
	// asks and blocks are findings made while parsing (computed command
	// words, interpreter code, hermes run by the agent...).
	asks, blocks []finding

	dir   dirState
	paths pathResolver
}

type pipe struct{ from, to []simpleCommand }

func (a *analysis) ask(key, desc string) { a.asks = append(a.asks, finding{key, desc}) }

// analyze normalizes and parses command as run in dir.
func analyze(command string, paths pathResolver, dir dirState) *analysis {
	a := &analysis{normalized: normalize(command), paths: paths, dir: dir}
	a.texts = append(a.texts, a.normalized)
	a.parsed = a.parse(a.normalized, 0)
	return a
}

// ansiEscape matches terminal escape sequences (CSI and OSC).
var ansiEscape = lazyregexp.New(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)`)

// normalize removes what hides a command from a reader but not from the
// shell: terminal escape sequences and NUL bytes; it maps fullwidth ASCII
// (U+FF01–U+FF5E, as NFKC does) to ASCII and other Unicode spaces to a
// plain space, then trims.
func normalize(command string) string {
	s := command
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansiEscape().ReplaceAllString(s, "")
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == 0:
		case r < 0x80 && r != '\v' && r != '\f' && r != '\r' && r != 0x85:
			b.WriteRune(r)
		case r >= 0xFF01 && r <= 0xFF5E:
			b.WriteRune(r - 0xFEE0)
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
	r := &renderer{vars: collectVars(file)}
	ok := true
	syntax.Walk(file, func(node syntax.Node) bool {
		switch n := node.(type) {
		case *syntax.Stmt:
			ok = a.stmt(n, r, depth) && ok
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				a.texts = append(a.texts, strings.TrimSpace(src[n.Pos().Offset():n.End().Offset()]))
				c, scripts := a.command(n, r, true)
				for _, s := range scripts {
					ok = a.parse(s, depth+1) && ok
				}
				ok = a.classify(c, depth) && ok
			}
			for _, as := range n.Assigns {
				ok = a.assign(as, r, depth) && ok
			}
		case *syntax.DeclClause:
			for _, as := range n.Args {
				ok = a.assign(as, r, depth) && ok
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				ok = a.pipe(n, r, depth) && ok
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

// commandVars are environment variables whose value programs run as a
// shell command (bash's PROMPT_COMMAND, git's GIT_SSH_COMMAND, pagers and
// editors); codeVars make a program load code from the file they name.
var (
	commandVars = map[string]bool{"PROMPT_COMMAND": true, "GIT_SSH_COMMAND": true, "GIT_SSH": true, "GIT_PAGER": true,
		"PAGER": true, "MANPAGER": true, "SYSTEMD_PAGER": true, "GIT_EDITOR": true, "EDITOR": true, "VISUAL": true,
		"GIT_SEQUENCE_EDITOR": true, "GIT_EXTERNAL_DIFF": true, "GIT_ASKPASS": true, "SSH_ASKPASS": true, "BROWSER": true,
		"LESSOPEN": true, "LESSCLOSE": true, "PS0": true, "PS1": true, "PS2": true, "PS4": true}
	codeVars = map[string]bool{"BASH_ENV": true, "ENV": true, "LD_PRELOAD": true, "LD_AUDIT": true, "PERL5OPT": true,
		"NODE_OPTIONS": true, "RUBYOPT": true, "PYTHONSTARTUP": true}
)

// assign checks a variable assignment (prefix, bare or declared) that
// makes programs run something: the value of a command variable is checked
// as the command it is (PROMPT_COMMAND='rm -rf x' bash -i); a computed
// value, or one naming a descriptor, of a code variable needs approval
// (BASH_ENV=<(echo 'rm -rf x') bash -c true).
func (a *analysis) assign(as *syntax.Assign, r *renderer, depth int) bool {
	if as.Name == nil {
		return true
	}
	name := as.Name.Value
	if name == "HERMES_YOLO_MODE" {
		a.ask("hermes self", "sets HERMES_YOLO_MODE, which turns approvals off for hermes run from here")
		return true
	}
	if !commandVars[name] && !codeVars[name] || as.Value == nil {
		return true
	}
	val, static := r.word(as.Value)
	switch {
	case !static:
		a.ask("run computed code", name+" is set to a value computed at run time, which a program will run")
	case codeVars[name]:
		if isDescriptorPath(val) {
			a.ask("run computed code", name+" makes programs load code from "+val+", fed in where the check cannot see it")
		}
	case strings.HasPrefix(name, "PS"):
		if strings.Contains(val, "$(") || strings.Contains(val, "`") {
			a.ask("run computed code", name+" holds a substitution the shell runs at every prompt: "+clip(val))
		}
	default:
		return a.parse(val, depth+1)
	}
	return true
}

// stmt records a statement's output redirections and checks here-documents
// and here-strings fed to a shell or interpreter.
func (a *analysis) stmt(n *syntax.Stmt, r *renderer, depth int) bool {
	ok := true
	for _, rd := range n.Redirs {
		switch rd.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
			if rd.Word != nil {
				for _, s := range r.fieldsEach(rd.Word) {
					a.redirects = append(a.redirects, target{s, a.dir})
				}
			}
		case syntax.DplIn:
			// sh <&3: the program comes from a descriptor opened elsewhere
			// (exec 3<<<'rm -rf x'), which the check does not follow.
			if call, isCall := n.Cmd.(*syntax.CallExpr); isCall && len(call.Args) > 0 && (rd.N == nil || rd.N.Value == "0") {
				if c, _ := a.command(call, r, false); readsCode(c) != "" {
					a.ask("run computed code", c.name()+" reads its program from another file descriptor, fed in where the check cannot see it")
				}
			}
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.RdrIn:
			call, isCall := n.Cmd.(*syntax.CallExpr)
			if !isCall || len(call.Args) == 0 {
				continue
			}
			c, _ := a.command(call, r, false)
			lang := readsCode(c)
			if lang == "" {
				continue
			}
			w := rd.Hdoc
			if rd.Op == syntax.WordHdoc || rd.Op == syntax.RdrIn {
				w = rd.Word
			}
			if w == nil {
				continue
			}
			text, static := r.word(w)
			switch {
			case rd.Op == syntax.RdrIn:
				if !static {
					a.ask("run computed code", c.name()+" reads its program from "+text+", computed at run time")
				}
			case !static:
				a.ask("run computed code", "the text fed to "+c.name()+" is computed at run time")
			case lang == "shell":
				ok = a.parse(text, depth+1) && ok
			case !trivialCode(lang, text):
				a.ask("interpreter code", "runs "+c.name()+" code that could reach the system: "+clip(text))
				a.codeLinkFindings(c.name(), text)
			}
		}
	}
	return ok
}

// command renders and unwraps a call; scripts are the shell scripts its
// launchers run (env -S, su -c, watch).
func (a *analysis) command(call *syntax.CallExpr, r *renderer, withSubst bool) (simpleCommand, []string) {
	var args []string
	for i, w := range call.Args {
		if i == 0 { // a program name with several values is computed
			args = append(args, r.fields(w)...)
		} else {
			args = append(args, r.fieldsEach(w)...)
		}
	}
	c := simpleCommand{dir: a.dir}
	if withSubst {
		for _, w := range call.Args {
			syntax.Walk(w, func(node syntax.Node) bool {
				var stmts []*syntax.Stmt
				switch n := node.(type) {
				case *syntax.CmdSubst:
					stmts = n.Stmts
				case *syntax.ProcSubst:
					stmts = n.Stmts
				}
				for _, s := range stmts {
					if inner, isCall := s.Cmd.(*syntax.CallExpr); isCall && len(inner.Args) > 0 {
						name, _ := r.word(inner.Args[0])
						c.subst = append(c.subst, baseName(name))
					}
				}
				return true
			})
		}
	}
	u := unwrap(args)
	c.args, c.via = u.args, u.via
	return c, u.scripts
}

// stmtCommands lists the unwrapped simple commands inside s, in order.
func (a *analysis) stmtCommands(s *syntax.Stmt, r *renderer) []simpleCommand {
	var out []simpleCommand
	syntax.Walk(s, func(node syntax.Node) bool {
		if call, ok := node.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			c, _ := a.command(call, r, false)
			if len(c.args) > 0 {
				out = append(out, c)
			}
		}
		return true
	})
	return out
}

// pipe records a pipeline and checks what is piped into a shell or
// interpreter reading its program from stdin: constant text from echo or
// printf is parsed (or checked as program text); anything else needs approval.
func (a *analysis) pipe(n *syntax.BinaryCmd, r *renderer, depth int) bool {
	p := pipe{from: a.stmtCommands(n.X, r), to: a.stmtCommands(n.Y, r)}
	a.pipes = append(a.pipes, p)
	if len(p.to) == 0 {
		return true
	}
	lang := readsCode(p.to[0])
	if lang == "" {
		return true
	}
	text, static := echoedText(p.from)
	specific := slices.ContainsFunc(p.from, func(c simpleCommand) bool { return isDownloader(c.name()) || isDecoder(c.name()) })
	switch {
	case !static && specific: // "pipe remote script to shell" or "decode and run"
	case !static:
		a.ask("pipe into interpreter", "output of "+commandNames(p.from)+" is piped into "+p.to[0].name()+", which runs it as a program")
	case lang == "shell":
		return a.parse(text, depth+1)
	case !trivialCode(lang, text):
		a.ask("interpreter code", "runs "+p.to[0].name()+" code that could reach the system: "+clip(text))
		a.codeLinkFindings(p.to[0].name(), text)
	}
	return true
}

// echoedText returns the text a list of echo/printf commands prints, when
// it is constant.
func echoedText(cmds []simpleCommand) (string, bool) {
	var parts []string
	for _, c := range cmds {
		switch c.name() {
		case "echo":
			if len(c.args) > 1 && strings.HasPrefix(c.args[1], "-") && c.args[1] != "-n" {
				return "", false
			}
			parts = append(parts, strings.Join(c.args[1:], " "))
		case "printf":
			if len(c.args) < 2 || strings.ContainsAny(c.args[1], `%\`) {
				return "", false
			}
			parts = append(parts, c.args[1])
		default:
			return "", false
		}
		if slices.ContainsFunc(c.args, func(s string) bool { return strings.Contains(s, "$") }) {
			return "", false
		}
	}
	return strings.Join(parts, "\n"), len(parts) > 0
}

func commandNames(cmds []simpleCommand) string {
	var names []string
	for _, c := range cmds {
		names = append(names, c.name())
	}
	return strings.Join(names, ", ")
}

// readsCode reports whether c runs the program it reads from stdin: "shell"
// for shells (and at, batch, source /dev/stdin), the language for
// interpreters, "" otherwise.
func readsCode(c simpleCommand) string {
	if len(c.args) == 0 {
		return ""
	}
	name := c.name()
	switch {
	case isShell(name):
		if shellReadsStdin(c.args) {
			return "shell"
		}
	case name == "source" || name == ".":
		if len(c.args) > 1 && isStdinPath(c.args[1]) {
			return "shell"
		}
	case name == "at" || name == "batch":
		return "shell"
	default:
		if lang := interpreterLang(name); lang != "" && lang != "awk" {
			if _, stdin, _ := interpreterCode(lang, c.args); stdin {
				return lang
			}
		}
	}
	return ""
}

// computedWord reports whether a command word is computed at run time: it
// holds an expansion the check could not resolve or a glob in its base name.
// A static base name under a computed directory ("$HOME/bin/tool") is known.
func computedWord(w string) bool {
	if w == "[" {
		return false
	}
	base := w
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		base = w[i+1:]
	}
	return base == "" || isDynamic(w) || strings.ContainsAny(base, "$*?[") || strings.ContainsAny(w, "`")
}

// classify records c and the findings about how it runs code: computed
// command words, nested scripts, interpreter code, find -exec, cd and
// hermes run by the agent.
func (a *analysis) classify(c simpleCommand, depth int) bool {
	if len(c.args) == 0 {
		return true
	}
	ok := true
	a.texts = append(a.texts, denyForms(c.args)...)
	name := c.name()
	if computedWord(c.args[0]) {
		a.ask("computed command", "the program name "+c.args[0]+" is computed at run time, so what runs cannot be checked")
	}
	if script, found, missing := shellScript(c.args); found {
		ok = a.parse(script, depth+1) && ok
	} else if missing {
		a.ask("computed command", name+" -c runs a script that is not on the command line")
	}
	switch lang := interpreterLang(name); {
	case lang != "":
		code, _, script := interpreterCode(lang, c.args)
		for _, text := range code {
			if isDynamic(text) || !trivialCode(lang, text) {
				a.ask("interpreter code", "runs "+name+" code that could reach the system: "+clip(text))
			}
			a.codeLinkFindings(name, text)
		}
		if isDynamic(script) {
			a.ask("run computed code", name+" runs the program "+script+", computed at run time")
		} else if script != "" && isDescriptorPath(script) && !isStdinPath(script) {
			a.ask("run computed code", name+" runs the program in "+script+", fed in where the check cannot see it")
		}
		if lang == "awk" && slices.ContainsFunc(optionValues(c.args, "f", "--file"), isDescriptorPath) {
			a.ask("run computed code", name+" reads its program from a file descriptor, fed in where the check cannot see it")
		}
	case isShell(name) || name == "source" || name == ".":
		if s := shellScriptOperand(c.args); name == "source" || name == "." {
			if len(c.args) > 1 && isDynamic(c.args[1]) {
				a.ask("run computed code", name+" runs "+c.args[1]+", computed at run time")
			} else if len(c.args) > 1 && isDescriptorPath(c.args[1]) && !isStdinPath(c.args[1]) {
				a.ask("run computed code", name+" runs the script in "+c.args[1]+", fed in where the check cannot see it")
			}
		} else if isDynamic(s) {
			a.ask("run computed code", name+" runs "+s+", computed at run time")
		} else if s != "" && isDescriptorPath(s) && !isStdinPath(s) {
			a.ask("run computed code", name+" runs the script in "+s+", fed in where the check cannot see it")
		}
	case name == "sed":
		_, operands := options(c.args)
		scripts := optionValues(c.args, "e", "--expression")
		if len(scripts) == 0 && len(operands) > 0 {
			scripts = operands[:1]
		}
		if slices.ContainsFunc(optionValues(c.args, "f", "--file"), isDescriptorPath) {
			a.ask("interpreter code", "sed reads its script from a file descriptor, fed in where the check cannot see it")
		}
		for _, s := range scripts {
			if sedRuns(s) {
				a.ask("interpreter code", "the sed script runs commands or writes files: "+clip(s))
			}
		}
	case name == "find":
		for _, sub := range findExecs(c.args) {
			u := unwrap(sub)
			ok = a.classifyAll(simpleCommand{args: u.args, via: u.via, dir: c.dir}, u.scripts, depth+1) && ok
		}
	case name == "cd" || name == "pushd":
		a.chdir(c.args)
	case name == "hermes":
		block, ask := hermesSelf(c.args)
		if block != nil {
			a.blocks = append(a.blocks, *block)
		}
		if ask != nil {
			a.asks = append(a.asks, *ask)
		}
	case name == "make" || name == "gmake":
		if slices.ContainsFunc(optionValues(c.args, "f", "--file", "--makefile"), isDescriptorPath) || len(optionValues(c.args, "E", "--eval")) > 0 {
			a.ask("run computed code", "make runs rules given on the command line or a descriptor, unchecked")
		}
	case name == "crontab" || name == "at" || name == "batch":
		if !slices.Contains(c.args[1:], "-l") {
			a.ask("schedule command", name+" schedules commands to run later, unchecked")
		}
	}
	if f := runsConfiguredCommand(c.args); f != nil {
		a.asks = append(a.asks, *f)
	}
	a.commands = append(a.commands, c)
	return ok
}

// classifyAll classifies a command found inside another (find -exec) with
// the scripts its launchers run.
func (a *analysis) classifyAll(c simpleCommand, scripts []string, depth int) bool {
	if depth > maxNesting {
		return false
	}
	ok := true
	for _, s := range scripts {
		ok = a.parse(s, depth+1) && ok
	}
	return a.classify(c, depth) && ok
}

// findExecs returns the commands of find's -exec, -execdir, -ok and -okdir
// actions; {} (a found path) becomes stdinMarker.
func findExecs(args []string) [][]string {
	var out [][]string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && args[j] != ";" && args[j] != "+" {
			j++
		}
		var sub []string
		for _, s := range args[i+1 : j] {
			sub = append(sub, strings.ReplaceAll(s, "{}", stdinMarker))
		}
		if len(sub) > 0 {
			out = append(out, sub)
		}
		i = j
	}
	return out
}

// chdir follows cd/pushd: the new directory joins the candidates (a cd in a
// branch or subshell may or may not have happened); one computed at run
// time makes the directory unknown.
func (a *analysis) chdir(args []string) {
	dest := "~"
	_, operands := options(args)
	if len(operands) > 0 {
		dest = operands[0]
	}
	cands, known := a.paths.resolve(dest, a.dir)
	if dest == "-" || !known {
		a.dir = dirState{dirs: a.dir.dirs, known: false}
		return
	}
	dirs := slices.Clone(a.dir.dirs)
	for _, c := range cands {
		if !slices.Contains(dirs, c) {
			dirs = append(dirs, c)
		}
	}
	a.dir = dirState{dirs: dirs, known: a.dir.known}
}

// clip shortens program text for a message.
func clip(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, dynamicMark, "")), " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// isForkBomb reports a function that runs itself in a pipeline or in the
// background: `:(){ :|:& };:` and its renamed forms.
func isForkBomb(name string, body *syntax.Stmt) bool {
	calls := func(s *syntax.Stmt) bool {
		found := false
		syntax.Walk(s, func(node syntax.Node) bool {
			if c, ok := node.(*syntax.CallExpr); ok && len(c.Args) > 0 {
				if lit := c.Args[0].Lit(); lit == name {
					found = true
				}
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
