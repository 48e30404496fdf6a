package approval

import (
	"slices"
	"strings"
)

// cwdFile stands for a file a command creates in its working directory
// under a name the check does not know (curl -O, wget, tar x, unzip).
const cwdFile = "file-in-working-directory"

// optionValues returns the values of the given options in args: short
// options as "-o VALUE" or "-oVALUE", long ones as "--output VALUE" or
// "--output=VALUE".
func optionValues(args []string, short string, long ...string) []string {
	var out []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a, "=")
			if slices.Contains(long, name) {
				if hasVal {
					out = append(out, val)
				} else if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
			}
			continue
		}
		if short == "" || len(a) < 2 || a[0] != '-' {
			continue
		}
		if idx := strings.IndexAny(a[1:], short); idx >= 0 {
			rest := a[idx+2:]
			if rest != "" {
				out = append(out, rest)
			} else if i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		}
	}
	return out
}

// writeTargets returns the paths a simple command writes, creates, changes
// or removes (not counting redirections).
func writeTargets(args []string) []string {
	name := baseName(args[0])
	flags, operands := options(args)
	last := func() []string {
		if len(operands) >= 2 {
			return operands[len(operands)-1:]
		}
		return nil
	}
	switch name {
	case "cp", "install", "ln", "rsync", "scp":
		if t := optionValues(args, "t", "--target-directory"); len(t) > 0 {
			return t
		}
		if name == "install" && hasFlag(flags, "d", "--directory") {
			return operands
		}
		if name == "scp" || name == "rsync" {
			return slices.DeleteFunc(last(), func(s string) bool { return strings.Contains(s, ":") })
		}
		return last()
	case "mv":
		// the sources disappear from where they were
		if t := optionValues(args, "t", "--target-directory"); len(t) > 0 {
			return append(t, operands...)
		}
		return operands
	case "rm", "unlink", "rmdir", "shred", "truncate", "touch", "mkdir", "mkfifo", "mknod", "tee", "sponge", "srm":
		return operands
	case "chmod", "chown", "chgrp", "chattr", "setfacl":
		if len(operands) > 1 && !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "--reference") }) {
			return operands[1:]
		}
		return operands
	case "dd":
		var out []string
		for _, a := range args[1:] {
			if t, ok := strings.CutPrefix(a, "of="); ok {
				out = append(out, t)
			}
		}
		return out
	case "sed":
		if !hasFlag(flags, "i", "--in-place") {
			return nil
		}
		if len(optionValues(args, "ef", "--expression", "--file")) > 0 {
			return operands
		}
		if len(operands) > 1 {
			return operands[1:]
		}
	case "perl", "ruby":
		if slices.ContainsFunc(flags, func(f string) bool { return !strings.HasPrefix(f, "--") && strings.Contains(f, "i") }) {
			return operands
		}
	case "curl":
		out := optionValues(args, "oDc", "--output", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--output-dir", "--etag-save")
		if hasFlag(flags, "OJ", "--remote-name", "--remote-name-all", "--remote-header-name") {
			out = append(out, cwdFile)
		}
		return out
	case "wget":
		out := optionValues(args, "Ooa", "--output-document", "--output-file", "--append-output")
		if dirs := optionValues(args, "P", "--directory-prefix"); len(dirs) > 0 {
			return append(out, dirs...)
		}
		if len(optionValues(args, "O", "--output-document")) == 0 {
			out = append(out, cwdFile)
		}
		return out
	case "tar", "bsdtar":
		mode := ""
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			mode = args[1]
		}
		for _, f := range flags {
			if !strings.HasPrefix(f, "--") {
				mode += f
			}
		}
		switch {
		case strings.Contains(mode, "x") || slices.Contains(flags, "--extract") || slices.Contains(flags, "--get"):
			if d := optionValues(args, "C", "--directory"); len(d) > 0 {
				return d
			}
			return []string{cwdFile}
		case strings.Contains(mode, "c") || slices.Contains(flags, "--create"):
			return optionValues(args, "f", "--file")
		}
	case "unzip":
		if d := optionValues(args, "d", ""); len(d) > 0 {
			return d
		}
		return []string{cwdFile}
	case "sort":
		return optionValues(args, "o", "--output")
	case "find":
		var out []string
		for i, a := range args[:len(args)-1] {
			if a == "-fprint" || a == "-fprint0" || a == "-fprintf" || a == "-fls" {
				out = append(out, args[i+1])
			}
		}
		return out
	case "git":
		if subcommand(args) == "clean" {
			// git clean deletes untracked files under the work tree or the
			// pathspecs: git -C ~ clean -fdx empties a dotfiles home
			i := slices.Index(args, "clean")
			var out []string
			for _, a := range args[i+1:] {
				if !strings.HasPrefix(a, "-") {
					out = append(out, a)
				}
			}
			if len(out) > 0 {
				return out
			}
			if d := optionValues(args[:i], "C", "--work-tree"); len(d) > 0 {
				return d
			}
			return []string{cwdFile}
		}
		if f := gitConfigFile(args); len(f) > 0 {
			return f
		}
		if len(operands) >= 1 && operands[0] == "clone" {
			if len(operands) >= 3 {
				return operands[2:3]
			}
			return []string{cwdFile}
		}
	case "patch":
		// patch FILE < diff, patch -d DIR, else the files the diff names
		// under the current directory
		out := append(optionValues(args, "do", "--directory", "--output"), operands...)
		return append(out, cwdFile)
	case "rename", "prename", "file-rename", "ed", "ex", "red":
		return operands
	}
	return nil
}
