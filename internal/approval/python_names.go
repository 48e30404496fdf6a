package approval

import "strings"

// Python names that reach the system, for trivialCode: a name (a maximal
// run of ASCII letters, digits and "_", in NFKC form, anywhere in the
// text, strings included) is unsafe when it
//   - contains "__" (dunder reflection, __import__),
//   - starts with "_" and has more (private names: random._os, and
//     from random import _os),
//   - is one of pythonUnsafeNames (modules and functions that reach
//     processes, files, the network or reflection by a computed name),
//   - or starts with one of pythonUnsafePrefixes (os.execvp,
//     os.posix_spawnp, posixpath: longer names of the same functions; an
//     attacker trial's inputs).
//
// A scan of the names rather than one regular expression: the expression
// with these alternations cost ~50 µs per script (RE2's NFA over every
// byte); the scan is linear with a map lookup per name.
var (
	pythonUnsafeNames = map[string]bool{
		"attrgetter": true, "methodcaller": true, "Formatter": true, "get_field": true, "get_type_hints": true,
		"ForwardRef": true, "codecs": true, "os": true, "modules": true, "subprocess": true, "shutil": true,
		"pathlib": true, "importlib": true, "ctypes": true, "socket": true, "pty": true, "signal": true,
		"multiprocessing": true, "threading": true, "asyncio": true, "urllib": true, "http": true, "requests": true,
		"tempfile": true, "glob": true, "io": true, "builtins": true, "runpy": true, "fcntl": true, "mmap": true,
		"webbrowser": true, "eval": true, "compile": true, "getattr": true, "setattr": true, "delattr": true,
		"globals": true, "locals": true, "vars": true, "input": true, "breakpoint": true, "help": true,
		"rmtree": true, "write": true,
	}
	pythonUnsafePrefixes = []string{"exec", "spawn", "posix", "system", "popen", "open", "remove", "unlink", "rmdir",
		"rename", "chmod", "chown", "kill", "fork", "environ", "getenv", "putenv"}
)

// pythonNamesUnsafe reports whether code names anything unsafe (above).
func pythonNamesUnsafe(code string) bool {
	for i := 0; i < len(code); {
		if !isNameByte(code[i]) {
			i++
			continue
		}
		j := i
		for j < len(code) && isNameByte(code[j]) {
			j++
		}
		if pythonNameUnsafe(code[i:j]) {
			return true
		}
		i = j
	}
	return false
}

// pythonNameUnsafe reports whether one name is unsafe (above).
func pythonNameUnsafe(name string) bool {
	if strings.Contains(name, "__") || (name[0] == '_' && len(name) > 1) || pythonUnsafeNames[name] {
		return true
	}
	for _, p := range pythonUnsafePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// isNameByte reports whether b is an ASCII letter, digit or "_" (a
// regular expression's \w).
func isNameByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
