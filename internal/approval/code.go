package approval

import (
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/internal/lazyregexp"
	"golang.org/x/text/unicode/norm"
)

var shells = map[string]bool{"sh": true, "bash": true, "rbash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "yash": true, "fish": true, "csh": true, "tcsh": true}

func isShell(name string) bool { return shells[name] }

// interpreterLang names the language of a script interpreter ("python",
// "perl", "ruby", "node", "php", "lua", "awk", "other") or "" when name is
// not one. Shells are not interpreters here.
func interpreterLang(name string) string {
	switch {
	case strings.HasPrefix(name, "python"), strings.HasPrefix(name, "pypy"):
		return "python"
	case strings.HasPrefix(name, "perl"):
		return "perl"
	case name == "ruby", name == "irb", name == "jruby":
		return "ruby"
	case name == "node", name == "nodejs", name == "deno", name == "bun":
		return "node"
	case strings.HasPrefix(name, "php"):
		return "php"
	case strings.HasPrefix(name, "lua"):
		return "lua"
	case name == "awk", name == "gawk", name == "mawk", name == "nawk":
		return "awk"
	case name == "Rscript", name == "R", name == "osascript", name == "julia", name == "tclsh", name == "wish", name == "expect", name == "guile", name == "racket", name == "jshell", name == "groovy", name == "scala", name == "elixir", name == "erl", name == "pwsh", name == "gdb":
		return "other"
	}
	return ""
}

// isInterpreter reports shells and script interpreters that run what they read.
func isInterpreter(name string) bool {
	return isShell(name) || name == "source" || name == "." || interpreterLang(name) != ""
}

// codeFlags are, per language, the options whose value is program text.
var codeFlags = map[string]string{
	"python": "c", "perl": "eE", "ruby": "e", "node": "ep", "php": "r", "lua": "e", "other": "ec",
}

// valueFlags are, per language, short options that take a separate value
// (so the value is not taken for a script operand).
var valueFlags = map[string]string{
	"python": "mWXQ", "perl": "IMmx", "ruby": "rIEC", "node": "r", "php": "cdfz", "lua": "l", "awk": "fvF", "other": "fl",
}

// interpreterCode returns the program text of an interpreter call (python
// -c CODE, perl -e CODE, node --eval CODE, awk 'PROGRAM'), whether it reads
// its program from stdin (no code, no module and no script operand, or the
// operand "-" or /dev/stdin) and its script operand.
func interpreterCode(lang string, args []string) (code []string, stdin bool, script string) {
	cf, vf := codeFlags[lang], valueFlags[lang]
	module := false
	awkProgramFile := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				script = args[i+1]
			}
			break
		}
		if long, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(long, "--") {
			if long == "--eval" || long == "--print" || long == "--source" || long == "--command" {
				code = append(code, val)
			}
			continue
		}
		if a == "--eval" || a == "--print" || a == "--source" || a == "--command" {
			if i+1 < len(args) {
				code = append(code, args[i+1])
				i++
			}
			continue
		}
		if strings.HasPrefix(a, "--") {
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if lang == "awk" && len(code) == 0 && !awkProgramFile {
				code = append(code, a)
				continue
			}
			script = a
			break
		}
		// a short option cluster such as -c, -ne, -pi.bak, -Ic
		for j := 1; j < len(a); j++ {
			c := a[j]
			if strings.IndexByte(cf, c) >= 0 {
				if j+1 < len(a) {
					code = append(code, a[j+1:])
				} else if i+1 < len(args) {
					code = append(code, args[i+1])
					i++
				}
				break
			}
			if strings.IndexByte(vf, c) >= 0 {
				if c == 'm' && lang == "python" {
					module = true
				}
				if c == 'f' && lang == "awk" {
					awkProgramFile = true
				}
				if j+1 == len(a) && i+1 < len(args) {
					i++
				}
				break
			}
			if lang == "perl" && c == 'i' { // -i[extension]
				break
			}
			if lang == "perl" && (c == 'l' || c == '0') { // -l[octal], -0[octal]: digits only
				for j+1 < len(a) && a[j+1] >= '0' && a[j+1] <= '9' {
					j++
				}
			}
		}
		if module {
			break
		}
	}
	stdin = len(code) == 0 && !module && !awkProgramFile && (script == "" || isStdinPath(script))
	if lang == "awk" {
		stdin = false
	}
	return code, stdin, script
}

func isStdinPath(p string) bool {
	switch p {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return true
	}
	return false
}

// isDescriptorPath reports whether p names an open file descriptor
// (/dev/fd/N, /proc/self/fd/N, /proc/PID/fd/N) or stdin: a program read
// from it was fed in by a redirection the check may not see
// (exec 3<<<'rm -rf x'; sh /dev/fd/3).
func isDescriptorPath(p string) bool {
	if isStdinPath(p) || p == "/dev/stdin" {
		return true
	}
	p = path.Clean(p)
	if strings.HasPrefix(p, "/dev/fd/") {
		return true
	}
	parts := strings.Split(p, "/")
	return len(parts) >= 5 && parts[1] == "proc" && (parts[3] == "fd" || parts[3] == "task")
}

// shellReadsStdin reports whether a shell call reads its script from stdin
// (no script operand and no -c, or -s, or a stdin path as its script).
func shellReadsStdin(args []string) bool {
	for _, a := range args[1:] {
		if a == "--" {
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			if strings.HasPrefix(a, "--") {
				continue
			}
			if strings.Contains(a[1:], "s") {
				return true
			}
			if strings.Contains(a[1:], "c") {
				return false
			}
			continue
		}
		return isStdinPath(a)
	}
	return true
}

// shellScriptOperand returns the script file a shell runs ("" for none).
func shellScriptOperand(args []string) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file" {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+") {
			if !strings.HasPrefix(a, "--") && strings.Contains(a[1:], "c") {
				return ""
			}
			continue
		}
		return a
	}
	return ""
}

// shellScript returns the script of `sh -c SCRIPT` (also -lc, -ec...),
// `eval ARGS...`, `trap SCRIPT SIGNAL...` and `alias NAME=SCRIPT`; missing
// is set for `sh -c` without a script (it comes from somewhere the check
// cannot see).
func shellScript(args []string) (script string, found, missing bool) {
	switch path.Base(args[0]) {
	case "eval":
		return strings.Join(args[1:], " "), len(args) > 1, false
	case "trap":
		if len(args) > 2 && !strings.HasPrefix(args[1], "-") {
			return args[1], true, false
		}
		return "", false, false
	case "alias":
		var parts []string
		for _, a := range args[1:] {
			if _, v, ok := strings.Cut(a, "="); ok {
				parts = append(parts, v)
			}
		}
		return strings.Join(parts, "\n"), len(parts) > 0, false
	}
	if !isShell(path.Base(args[0])) {
		return "", false, false
	}
	for i := 1; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") || strings.HasPrefix(arg, "--") {
			continue
		}
		if strings.Contains(arg[1:], "c") {
			if i+1 < len(args) {
				return args[i+1], true, false
			}
			return "", false, true
		}
	}
	return "", false, false
}

// Program text is "trivially safe" when it uses nothing that reaches the
// system: no process, file, network, environment, dynamic evaluation or
// text decoding that could hide any of those, and no reflection that
// could reach them by a computed name (Python: private attributes such as
// random._os, operator's attrgetter/methodcaller, string.Formatter's
// fields, typing's string-evaluated hints — an attacker trial's inputs).
var (
	obfuscation = lazyregexp.New(`\\[xuUN0-7]|base64|b64|fromhex|unhexlify|fromCharCode|\bchr\b|rot13|decode|decompress|zlib|marshal|pickle|reverse|\[::-1\]`)
	unsafeCode  = sync.OnceValue(func() map[string]*regexp.Regexp {
		return map[string]*regexp.Regexp{
			"perl": regexp.MustCompile("`" + `|\b(system|exec|qx|open|opendir|sysopen|unlink|rmdir|rename|mkdir|chmod|chown|chdir|kill|fork|eval|require|use|do|syscall|socket|link|symlink|utime|truncate|glob|readpipe|dbmopen|pipe|ENV|pack|unpack)\b|/[msixpodualngcr]*e[msixpodualngcre]*\s*(;|$|\})`),
			"ruby": regexp.MustCompile("`" + `|%x|\b(system|exec|spawn|fork|open|File|Dir|IO|FileUtils|Kernel|Process|Open3|PTY|Socket|TCPSocket|eval|instance_eval|class_eval|module_eval|send|public_send|method|define_method|const_get|require|require_relative|load|syscall|ENV|ObjectSpace|binding|trap|at_exit|Marshal|YAML|pack|unpack)\b`),
			"node": regexp.MustCompile("`" + `|\b(require|import|process|child_process|eval|Function|fs|globalThis|global|constructor|prototype|__proto__|Deno|Bun|fetch|module|exports|Buffer|atob|setTimeout|setInterval|WebAssembly|Reflect|Proxy|this)\b|[\w)\]]\s*\[\s*[^\d\s\]]`),
			"php":  regexp.MustCompile("`" + `|\$\$|\$\w+\s*\(|\b(system|exec|shell_exec|passthru|popen|proc_open|pcntl_exec|eval|assert|create_function|include|require|include_once|require_once|file_put_contents|fopen|fwrite|unlink|rmdir|rename|mkdir|chmod|chown|copy|symlink|link|mail|putenv|getenv|call_user_func|call_user_func_array|array_map|preg_replace|str_rot13|hex2bin|pack|ENV|_ENV|_SERVER|GLOBALS)\b`),
			"lua":  regexp.MustCompile(`\b(os|io|require|load|loadstring|dofile|loadfile|debug|package|_G|setfenv|getfenv|rawget|rawset|char)\b`),
			"awk":  regexp.MustCompile(`\||\b(system|getline|close|fflush|ENVIRON)\b|\bprintf?\b[^;{}]*>|@(load|include)`),
		}
	})
	pythonImport     = lazyregexp.New(`\b(?:from\s+([\w.]+)\s+import|import\s+([\w., ]+))`)
	safePythonModule = map[string]bool{"json": true, "sys": true, "math": true, "re": true, "datetime": true, "time": true, "collections": true, "itertools": true, "functools": true, "hashlib": true, "random": true, "textwrap": true, "pprint": true, "statistics": true, "decimal": true, "fractions": true, "uuid": true, "unicodedata": true, "heapq": true, "bisect": true, "calendar": true, "html": true, "difflib": true, "struct": true, "fnmatch": true, "shlex": true, "secrets": true, "enum": true,
		// execute_code's module: each of its tool calls is approved on its own.
		"hermes_tools": true}
)

// trivialCode reports whether program text is trivially safe for lang.
// Python reads identifiers in NFKC form (PEP 3131: "ｏｓ" is os), so
// Python text is checked in that form.
func trivialCode(lang, code string) bool {
	if lang == "python" && !norm.NFKC.IsNormalString(code) {
		code = norm.NFKC.String(code)
	}
	if len(code) > 2000 || obfuscation().MatchString(code) {
		return false
	}
	if lang != "python" {
		re := unsafeCode()[lang]
		return re != nil && !re.MatchString(code)
	}
	return !pythonNamesUnsafe(code) && pythonImportsSafe(code)
}

// pythonImportsSafe reports whether every module code imports is one of
// safePythonModule (by its root: os.path is os).
func pythonImportsSafe(code string) bool {
	for _, m := range pythonImport().FindAllStringSubmatch(code, -1) {
		names := m[1]
		if names == "" {
			names = m[2]
		}
		for _, n := range strings.FieldsFunc(names, func(r rune) bool { return r == ',' || r == ' ' }) {
			if n == "as" {
				break
			}
			root, _, _ := strings.Cut(n, ".")
			if !safePythonModule[root] {
				return false
			}
		}
	}
	return true
}

// sedRuns reports whether a sed script executes commands or writes files
// (GNU sed's e command, the s///e and s///w flags, w and W commands).
func sedRuns(script string) bool {
	i := 0
	n := len(script)
	for i < n {
		// skip separators, addresses and negation
		for i < n && strings.IndexByte(" \t\n;{}!,0123456789$~+", script[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		c := script[i]
		if c == '/' || c == '\\' { // regex address
			delim := byte('/')
			if c == '\\' && i+1 < n {
				i++
				delim = script[i]
			}
			i = skipDelimited(script, i+1, delim)
			if i < n && script[i] == 'I' || i < n && script[i] == 'M' {
				i++
			}
			continue
		}
		i++
		switch c {
		case 'e', 'w', 'W':
			return true
		case 's', 'y':
			if i >= n {
				return false
			}
			delim := script[i]
			i = skipDelimited(script, i+1, delim)
			i = skipDelimited(script, i, delim)
			for i < n && strings.IndexByte(";\n}", script[i]) < 0 {
				if c == 's' && (script[i] == 'e' || script[i] == 'w' || script[i] == 'W') {
					return true
				}
				i++
			}
		case 'a', 'i', 'c', 'r', 'R', 'b', 't', 'T', ':', 'q', 'Q', 'l', 'L', 'v':
			for i < n && script[i] != '\n' && (c == 'a' || c == 'i' || c == 'c' || script[i] != ';') {
				i++
			}
		}
	}
	return false
}

// skipDelimited returns the index after the next unescaped delim from i.
func skipDelimited(s string, i int, delim byte) int {
	for i < len(s) {
		if s[i] == '\\' {
			i += 2
			continue
		}
		if s[i] == delim {
			return i + 1
		}
		i++
	}
	return i
}
